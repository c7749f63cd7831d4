//! What the admin and inbox endpoints answer for one stored message, dead letter, task or
//! conversation.

use chorus_bus::{DeadLetter, Envelope, TrackSummary};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::api::document;
use crate::state::AppState;
use crate::telemetry;

/// A stored message with its routing keys.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoredMessage {
    /// Position in the conversation's log (conversation timelines only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// The message id.
    pub id: String,
    /// When the hub accepted its publish, Unix milliseconds (the store's clock; the
    /// document's own `metadata.timestamp` is the sender's). Given on task timelines and
    /// search results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub published_ms: Option<i64>,
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
    pub message: Box<RawValue>,
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
    /// Why: `kind` is invalid, expired, max_deliver, no_route or failed, with details.
    #[schema(value_type = Object)]
    pub reason: Value,
    /// The document as published (a string when it was not JSON).
    #[schema(value_type = Object)]
    pub message: Box<RawValue>,
    /// When it became a dead letter, Unix milliseconds (null for a letter a NATS or Redis
    /// store kept before chorus recorded the time).
    pub dead_at_ms: Option<i64>,
}

/// The answer for a stored message (`seq`: its place in a conversation's log).
pub(crate) async fn stored(
    app: &AppState,
    env: Envelope,
    seq: Option<u64>,
    published_ms: Option<i64>,
) -> StoredMessage {
    StoredMessage {
        seq,
        published_ms,
        traceparent: telemetry::of_stored(&app.traces, &env.id, &env.bytes).await,
        message: document(&env.bytes).into_owned(),
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
            message: document(&d.bytes).into_owned(),
            id: d.id,
            message_id: d.message_id,
            queue: d.queue,
            dead_at_ms: d.at_ms,
        }
    }
}

/// A task or a conversation: how many messages it has and when they were published.
#[derive(Debug, Serialize, ToSchema)]
pub struct Track {
    /// The task id or conversation id.
    pub id: String,
    /// Messages logged under it (a replayed message counts again).
    pub messages: u64,
    /// When its first message was published, Unix milliseconds.
    pub first_ms: i64,
    /// When its latest message was published, Unix milliseconds.
    pub last_ms: i64,
}

impl From<TrackSummary> for Track {
    fn from(t: TrackSummary) -> Track {
        Track {
            id: t.id,
            messages: t.messages,
            first_ms: t.first_ms,
            last_ms: t.last_ms,
        }
    }
}
