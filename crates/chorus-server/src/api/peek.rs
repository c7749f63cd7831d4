//! Looking at an inbox without reading it: its unacknowledged messages and their state, as
//! JSON. Unlike the inbox stream, this claims nothing: no attempt is counted, no lease starts.

use axum::Json;
use axum::extract::State;
use chorus_bus::{PEEK_LIMIT, Queued, QueuedState};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::bodies::{StoredMessage, stored};
use crate::api::extract::{ApiPath, ApiQuery};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids::check_id;
use crate::state::AppState;

/// Messages listed when no `limit` is given.
const DEFAULT_LIMIT: usize = 100;

/// How many messages to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct PeekOptions {
    /// At most this many messages (0 to 1000, default 100; 0 gives only the depth).
    pub limit: Option<usize>,
}

/// Where an unacknowledged message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    /// Deliverable now: the next read of the stream may take it.
    Ready,
    /// Held by a stream that has not settled it, until `until_ms`.
    Held,
    /// Nacked with a delay: deliverable again at `until_ms`.
    Delayed,
    /// Held or nacked with a delay, the store keeps no difference (SQLite, Redis): deliverable
    /// again at `until_ms`.
    HeldOrDelayed,
    /// Delivered and not acknowledged; held, delayed or due again, the store does not say
    /// (NATS).
    Delivered,
}

impl From<QueuedState> for DeliveryState {
    fn from(state: QueuedState) -> DeliveryState {
        match state {
            QueuedState::Ready => DeliveryState::Ready,
            QueuedState::Held { .. } => DeliveryState::Held,
            QueuedState::Delayed { .. } => DeliveryState::Delayed,
            QueuedState::HeldOrDelayed { .. } => DeliveryState::HeldOrDelayed,
            QueuedState::Delivered => DeliveryState::Delivered,
        }
    }
}

/// A message of an inbox, not yet acknowledged, with its delivery state.
#[derive(Debug, Serialize, ToSchema)]
pub struct WaitingMessage {
    /// The stored message.
    #[serde(flatten)]
    pub stored: StoredMessage,
    /// Deliveries so far (0: never delivered); null when the store cannot tell (NATS, once a
    /// message of the inbox with that priority was delivered again).
    pub attempts: Option<u32>,
    /// Ready, held, delayed, held or delayed, or delivered.
    pub state: DeliveryState,
    /// When a held or delayed message becomes deliverable again, Unix milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<i64>,
}

/// What an inbox holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct InboxMessages {
    /// Messages stored in the inbox and not yet acknowledged: ready, held or delayed.
    pub depth: u64,
    /// The first `limit` of them in delivery order: highest priority first, then oldest first.
    pub messages: Vec<WaitingMessage>,
}

/// Lists the messages of `agent`'s inbox not yet acknowledged, with their delivery state,
/// without claiming them: looking counts no attempt and holds nothing (the stream does both).
#[utoipa::path(
    get,
    path = "/v1/agents/{agent}/inbox/messages",
    tag = "inbox",
    params(("agent" = String, Path, description = "The agent id"), PeekOptions),
    responses(
        (status = 200, description = "The inbox's depth and its first messages", body = InboxMessages),
        (status = 400, description = "An unsafe agent id or a bad limit", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's inbox", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn inbox_messages(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(agent): ApiPath<String>,
    ApiQuery(options): ApiQuery<PeekOptions>,
) -> Result<Json<InboxMessages>, ApiError> {
    check_id("the agent id", &agent)?;
    app.policy.may_read(&caller, &agent)?;
    let limit = match options.limit {
        None => DEFAULT_LIMIT,
        Some(n) if n <= PEEK_LIMIT => n,
        Some(n) => {
            return Err(ApiError::bad_request(
                "bad_query",
                format!("limit is {n}; it must be from 0 to {PEEK_LIMIT}"),
            ));
        }
    };
    let queued = if limit == 0 {
        Vec::new()
    } else {
        app.bus.peek(&agent, limit).await?
    };
    let depth = app.bus.depth(&agent).await?;
    let mut messages = Vec::with_capacity(queued.len());
    for Queued {
        envelope,
        attempts,
        state,
    } in queued
    {
        messages.push(WaitingMessage {
            stored: stored(&app, envelope, None, None).await,
            attempts,
            state: state.into(),
            until_ms: state.until_ms(),
        });
    }
    Ok(Json(InboxMessages { depth, messages }))
}
