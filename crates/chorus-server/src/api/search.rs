//! Search for the web UI's home page: what one id names — a task, a conversation, a
//! correlation, an agent's inbox, a message, dead letters — read from the store's own indexes.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::bodies::{DeadLetterBody, StoredMessage, stored};
use crate::api::extract::{Admin, ApiQuery};
use crate::api::pages::{MAX_LIMIT, listing_error};
use crate::error::{ApiError, ErrorBody};
use crate::ids::id_problem;
use crate::state::AppState;

/// Dead letters looked through at most for one search.
const DEAD_LETTER_SCAN: usize = 10 * MAX_LIMIT;

/// What to look for.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// A task, conversation, correlation, message, dead letter or agent id (exactly).
    pub q: String,
}

/// A task or conversation the id names, with its number of messages.
#[derive(Debug, Serialize, ToSchema)]
pub struct Found {
    /// The id.
    pub id: String,
    /// Messages logged under it, when the store counts them cheaply (not for conversations).
    pub messages: Option<u64>,
}

/// A correlation the id names: its messages and the tasks they belong to.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundCorrelation {
    /// The correlation id.
    pub id: String,
    /// Messages logged under it.
    pub messages: u64,
    /// The distinct task ids of those messages, in publish order.
    pub tasks: Vec<String>,
}

/// An inbox the id names (a configured agent, an inbox an agent reads or the routing config
/// names, or any inbox with messages waiting), with its unacknowledged messages.
#[derive(Debug, Serialize, ToSchema)]
pub struct FoundInbox {
    /// The agent or inbox id.
    pub id: String,
    /// Unacknowledged messages in it.
    pub depth: u64,
}

/// Everything one id names; each part empty (or null) when it names nothing of that kind.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResults {
    /// The id searched for.
    pub q: String,
    /// The task with this id.
    pub task: Option<Found>,
    /// The conversation with this id.
    pub conversation: Option<Found>,
    /// The correlation with this id.
    pub correlation: Option<FoundCorrelation>,
    /// The inbox with this id.
    pub inbox: Option<FoundInbox>,
    /// The message stored under this id, with when the hub accepted it (while the store
    /// keeps it; see `docs/server.md`).
    pub message: Option<StoredMessage>,
    /// Dead letters with this id or of the message with this id (among the first 10,000).
    pub dead_letters: Vec<DeadLetterBody>,
}

/// Looks up one id as a task, conversation, correlation, inbox, message and dead letter
/// (admin token).
#[utoipa::path(
    get,
    path = "/v1/search",
    tag = "admin",
    params(SearchQuery),
    responses(
        (status = 200, description = "What the id names", body = SearchResults),
        (status = 400, description = "The id is not in the safe alphabet", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn search(
    State(app): State<AppState>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<SearchResults>, ApiError> {
    let q = query.q.trim().to_owned();
    if let Some(problem) = id_problem(&q) {
        return Err(ApiError::bad_request(
            "bad_query",
            format!("q: {problem}; search takes one id"),
        ));
    }
    let bus = &app.bus;
    let tasks = bus
        .task_messages(&q, None, 1)
        .await
        .map_err(listing_error)?;
    let task = (!tasks.items.is_empty()).then(|| Found {
        id: q.clone(),
        messages: tasks.total,
    });
    let conversation = bus.conversation(&q, 0, 1).await.map_err(listing_error)?;
    let conversation = (!conversation.is_empty()).then(|| Found {
        id: q.clone(),
        messages: None,
    });
    let correlated = bus.by_correlation(&q).await.map_err(listing_error)?;
    let correlation = (!correlated.is_empty()).then(|| {
        let mut tasks: Vec<String> = Vec::new();
        for t in correlated.iter().filter_map(|e| e.task_id.as_ref()) {
            if !tasks.contains(t) {
                tasks.push(t.clone());
            }
        }
        FoundCorrelation {
            id: q.clone(),
            messages: correlated.len() as u64,
            tasks,
        }
    });
    let depth = bus.depth(&q).await?;
    let inbox = (app.policy.names(&q) || depth > 0).then(|| FoundInbox {
        id: q.clone(),
        depth,
    });
    let message = match bus.locate(&q).await.map_err(listing_error)? {
        Some(l) => Some(stored(&app, l.envelope, None, Some(l.published_ms)).await),
        None => None,
    };
    let mut dead_letters = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..DEAD_LETTER_SCAN / MAX_LIMIT {
        let page = bus
            .dead_letters_page(after.as_deref(), MAX_LIMIT)
            .await
            .map_err(listing_error)?;
        dead_letters.extend(
            page.items
                .into_iter()
                .filter(|d| d.id == q || d.message_id.as_deref() == Some(q.as_str()))
                .map(DeadLetterBody::from),
        );
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    Ok(Json(SearchResults {
        task,
        conversation,
        correlation,
        inbox,
        message,
        dead_letters,
        q,
    }))
}
