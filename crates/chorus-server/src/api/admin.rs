//! Admin endpoints: dead letters with replay, a task's and a conversation's timeline.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chorus_bus::{BusError, DeadLetter, Envelope, LogEntry};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::api::document;
use crate::api::extract::{ApiPath, ApiQuery};
use crate::api::publish::PublishReceipt;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids::check_id;
use crate::state::AppState;
use crate::telemetry;

/// Most conversation entries returned at once.
const PAGE: usize = 500;

/// A stored message with its routing keys.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoredMessage {
    /// Position in the conversation's log (conversation timelines only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The message id.
    pub id: String,
    /// The sending agent.
    pub sender: Option<String>,
    /// The addressed recipients.
    pub recipients: Vec<String>,
    /// The handoff type, for handoffs.
    pub handoff_type: Option<String>,
    /// LOW, MEDIUM, HIGH or CRITICAL.
    pub priority: String,
    /// The document exactly as published.
    #[schema(value_type = Object)]
    pub message: Value,
    /// The W3C trace context the message travels in, when known (a handoff's is kept beside
    /// it; see the inbox event's `traceparent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// A message that could not be delivered.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeadLetterBody {
    /// The dead letter's id (replay with it).
    pub id: String,
    /// The message id, when it could be read.
    pub message_id: Option<String>,
    /// The inbox it was taken from (none when refused on publish).
    pub queue: Option<String>,
    /// Why: `kind` is invalid, expired, max_deliver or no_route, with details.
    #[schema(value_type = Object)]
    pub reason: Value,
    /// The document as published (a string when it was not JSON).
    #[schema(value_type = Object)]
    pub message: Value,
}

/// Where a conversation page starts.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct After {
    /// Entries after this sequence number (0: from the start).
    #[serde(default)]
    pub after: u64,
}

async fn stored(app: &AppState, env: Envelope, seq: Option<u64>) -> StoredMessage {
    StoredMessage {
        seq,
        traceparent: telemetry::of_stored(&app.traces, &env.id, &env.bytes).await,
        message: document(&env.bytes),
        id: env.id,
        sender: env.sender,
        recipients: env.recipients,
        handoff_type: env.handoff_type,
        priority: env.priority.as_str().to_owned(),
    }
}

impl From<DeadLetter> for DeadLetterBody {
    fn from(d: DeadLetter) -> DeadLetterBody {
        DeadLetterBody {
            reason: serde_json::to_value(&d.reason).unwrap_or(Value::Null),
            message: document(&d.bytes),
            id: d.id,
            message_id: d.message_id,
            queue: d.queue,
        }
    }
}

/// Every dead letter, oldest first (admin token).
#[utoipa::path(
    get,
    path = "/v1/dead-letters",
    tag = "admin",
    responses(
        (status = 200, description = "The dead letters", body = Vec<DeadLetterBody>),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn dead_letters(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<DeadLetterBody>>, ApiError> {
    caller.require_admin("dead letters")?;
    let letters = app.bus.dead_letters().await?;
    Ok(Json(
        letters.into_iter().map(DeadLetterBody::from).collect(),
    ))
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
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<PublishReceipt>, ApiError> {
    caller.require_admin("dead letters")?;
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
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    caller.require_admin("dead letters")?;
    check_id("the dead letter id", &id)?;
    if !app.bus.dead_letters().await?.iter().any(|d| d.id == id) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no dead letter {id:?}"),
        ));
    }
    app.bus.remove_dead_letter(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every stored message of a task, in publish order (admin token).
#[utoipa::path(
    get,
    path = "/v1/tasks/{task_id}/messages",
    tag = "admin",
    params(("task_id" = String, Path, description = "The task id")),
    responses(
        (status = 200, description = "The task's messages", body = Vec<StoredMessage>),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn task(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(task_id): ApiPath<String>,
) -> Result<Json<Vec<StoredMessage>>, ApiError> {
    caller.require_admin("timelines")?;
    check_id("the task id", &task_id)?;
    let envelopes = app.bus.by_task(&task_id).await?;
    let mut out = Vec::with_capacity(envelopes.len());
    for e in envelopes {
        out.push(stored(&app, e, None).await);
    }
    Ok(Json(out))
}

/// A page of a conversation's log after `after` (admin token).
#[utoipa::path(
    get,
    path = "/v1/conversations/{conversation_id}/messages",
    tag = "admin",
    params(("conversation_id" = String, Path, description = "The conversation id"), After),
    responses(
        (status = 200, description = "Up to 500 entries with their sequence numbers", body = Vec<StoredMessage>),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn conversation(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(conversation_id): ApiPath<String>,
    ApiQuery(page): ApiQuery<After>,
) -> Result<Json<Vec<StoredMessage>>, ApiError> {
    caller.require_admin("timelines")?;
    check_id("the conversation id", &conversation_id)?;
    let entries = app
        .bus
        .conversation(&conversation_id, page.after, PAGE)
        .await?;
    let mut out = Vec::with_capacity(entries.len());
    for LogEntry { seq, envelope } in entries {
        out.push(stored(&app, envelope, Some(seq)).await);
    }
    Ok(Json(out))
}
