//! Admin endpoints: dead letters with replay, a task's and a conversation's timeline, each read
//! a page at a time.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chorus_bus::{BusError, Envelope, LogEntry, Page};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::api::bodies::{DeadLetterBody, stored};
use crate::api::extract::Admin;
use crate::api::extract::{ApiPath, ApiQuery};
use crate::api::pages::{DeadLetterPage, MessagePage, PageQuery, limit, listing_error};
use crate::api::publish::PublishReceipt;
use crate::error::{ApiError, ErrorBody};
use crate::ids::check_id;
use crate::state::AppState;

/// Which page of a conversation's log.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct After {
    /// Entries after this sequence number (0: from the start); the `next` of the page before.
    #[serde(default)]
    pub after: u64,
    /// At most this many entries (default 100; 1 to 1000, a value outside is brought inside).
    pub limit: Option<usize>,
}

/// Most message ids of one `GET /v1/dead-letters?message_id=…` or `GET /v1/deliveries`.
pub const MAX_MESSAGE_IDS: usize = 100;

/// Which dead letters: a page of all of them, or those of some messages.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterQuery {
    /// At most this many entries (default 100; 1 to 1000, a value outside is brought inside).
    pub limit: Option<usize>,
    /// The `next` of the page before, unchanged; the first page when absent.
    pub after: Option<String>,
    /// Only the dead letters that deliveries of these message ids became, comma-separated ids
    /// (1 to 100), read through the store's index (however many dead letters there are); all
    /// of them in one answer, without `limit` or `after`. Documents refused on publish are not
    /// found this way (anyone can publish bytes naming any id).
    pub message_id: Option<String>,
}

/// A page of the dead letters, oldest first, with their number; or the dead letters of some
/// message ids (admin token).
#[utoipa::path(
    get,
    path = "/v1/dead-letters",
    tag = "admin",
    params(DeadLetterQuery),
    responses(
        (status = 200, description = "A page of dead letters", body = DeadLetterPage),
        (status = 400, description = "A bad `limit`, `after` or `message_id`", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn dead_letters(
    State(app): State<AppState>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<DeadLetterQuery>,
) -> Result<Json<DeadLetterPage>, ApiError> {
    if let Some(ids) = &query.message_id {
        return dead_letters_of(&app, ids, &query).await.map(Json);
    }
    let page = PageQuery {
        limit: query.limit,
        after: query.after,
    };
    let letters = app
        .bus
        .dead_letters_page(page.after(), page.limit())
        .await
        .map_err(listing_error)?;
    Ok(Json(DeadLetterPage::of(letters, DeadLetterBody::from)))
}

/// The dead letters of the comma-separated message ids `ids`, oldest first.
async fn dead_letters_of(
    app: &AppState,
    ids: &str,
    query: &DeadLetterQuery,
) -> Result<DeadLetterPage, ApiError> {
    if query.limit.is_some() || query.after.is_some() {
        return Err(ApiError::bad_request(
            "bad_query",
            "message_id reads every dead letter of its ids: leave out limit and after",
        ));
    }
    let mut letters = Vec::new();
    for id in message_ids(ids)? {
        letters.extend(app.bus.dead_letters_of(id).await?);
    }
    letters.sort_by_key(|d| d.at_ms);
    Ok(DeadLetterPage {
        total: Some(letters.len() as u64),
        items: letters.into_iter().map(DeadLetterBody::from).collect(),
        next: None,
    })
}

/// The distinct ids of a comma-separated `message_id` query, each checked, at most
/// [`MAX_MESSAGE_IDS`].
pub(crate) fn message_ids(ids: &str) -> Result<Vec<&str>, ApiError> {
    let mut ids: Vec<&str> = ids.split(',').collect();
    let mut seen = std::collections::HashSet::new();
    ids.retain(|id| seen.insert(*id));
    if ids.len() > MAX_MESSAGE_IDS {
        return Err(ApiError::bad_request(
            "bad_query",
            format!(
                "message_id names {} ids; at most {MAX_MESSAGE_IDS} a request",
                ids.len()
            ),
        ));
    }
    for id in &ids {
        check_id("the message id", id)?;
    }
    Ok(ids)
}

/// Delivers a dead letter again (its inbox, or a new publish when it was refused) and removes
/// it (admin token).
#[utoipa::path(
    post,
    path = "/v1/dead-letters/{id}/replay",
    tag = "admin",
    params(("id" = String, Path, description = "The dead letter's id")),
    responses(
        (status = 200, description = "Stored again", body = PublishReceipt),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such dead letter", body = ErrorBody),
        (status = 422, description = "It would be refused again (invalid, or past its expiration time): why, and the dead letter kept as it was", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn replay(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<PublishReceipt>, ApiError> {
    check_id("the dead letter id", &id)?;
    let receipt = app.bus.replay(&id).await.map_err(|e| match e {
        BusError::UnknownDeadLetter(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
        }
        other => ApiError::from(other),
    })?;
    for q in &receipt.queues {
        app.metrics.saw_inbox(q);
    }
    Ok(Json(receipt.into()))
}

/// Deletes a dead letter for good (admin token).
#[utoipa::path(
    delete,
    path = "/v1/dead-letters/{id}",
    tag = "admin",
    params(("id" = String, Path, description = "The dead letter's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such dead letter", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn delete_dead_letter(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    check_id("the dead letter id", &id)?;
    match app.bus.remove_dead_letter(&id).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(BusError::UnknownDeadLetter(_)) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no dead letter {id:?}"),
        )),
        Err(other) => Err(other.into()),
    }
}

/// A page of a task's stored messages, in publish order, with their number (admin token).
#[utoipa::path(
    get,
    path = "/v1/tasks/{task_id}/messages",
    tag = "admin",
    params(("task_id" = String, Path, description = "The task id"), PageQuery),
    responses(
        (status = 200, description = "A page of the task's messages", body = MessagePage),
        (status = 400, description = "A bad `limit` or `after`", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn task(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(task_id): ApiPath<String>,
    ApiQuery(page): ApiQuery<PageQuery>,
) -> Result<Json<MessagePage>, ApiError> {
    check_id("the task id", &task_id)?;
    let read = app
        .bus
        .task_messages(&task_id, page.after(), page.limit())
        .await
        .map_err(listing_error)?;
    let numbered = Page {
        items: read
            .items
            .into_iter()
            .map(|l| (l.envelope, None, Some(l.published_ms)))
            .collect(),
        next: read.next,
        total: read.total,
    };
    Ok(Json(messages(&app, numbered).await))
}

/// A page of a conversation's log after sequence number `after` (admin token).
#[utoipa::path(
    get,
    path = "/v1/conversations/{conversation_id}/messages",
    tag = "admin",
    params(("conversation_id" = String, Path, description = "The conversation id"), After),
    responses(
        (status = 200, description = "A page of entries with their sequence numbers", body = MessagePage),
        (status = 400, description = "A bad `limit` or `after`", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn conversation(
    State(app): State<AppState>,
    _admin: Admin,
    ApiPath(conversation_id): ApiPath<String>,
    ApiQuery(page): ApiQuery<After>,
) -> Result<Json<MessagePage>, ApiError> {
    check_id("the conversation id", &conversation_id)?;
    let limit = limit(page.limit);
    let mut entries = app
        .bus
        .conversation(&conversation_id, page.after, limit + 1)
        .await?;
    let more = entries.len() > limit;
    entries.truncate(limit);
    let numbered = Page {
        next: more
            .then(|| entries.last().map(|e| e.seq.to_string()))
            .flatten(),
        items: entries
            .into_iter()
            .map(|LogEntry { seq, envelope }| (envelope, Some(seq), None))
            .collect(),
        total: None,
    };
    Ok(Json(messages(&app, numbered).await))
}

/// The answer for a page of stored messages (with their sequence numbers and publish times,
/// when they have them).
async fn messages(app: &AppState, page: Page<(Envelope, Option<u64>, Option<i64>)>) -> MessagePage {
    let mut items = Vec::with_capacity(page.items.len());
    for (envelope, seq, published_ms) in page.items {
        items.push(stored(app, envelope, seq, published_ms).await);
    }
    MessagePage {
        items,
        next: page.next,
        total: page.total,
    }
}
