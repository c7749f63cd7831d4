//! What the bus hands out and keeps: deliveries, receipts, dead letters, effects, log entries.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::envelope::Envelope;
use chorus_core::Problem;

/// One delivery of a message to a consumer; settle it with ack, nack or dead letter.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The message.
    pub envelope: Arc<Envelope>,
    /// The queue it was taken from (shared by the deliveries of one fetch).
    pub queue: Arc<str>,
    /// 1 on first delivery, 2 on the first redelivery, …
    pub attempt: u32,
    /// Backend-specific handle identifying this delivery attempt.
    pub token: String,
}

/// The answer to a successful publish: the message is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The message id.
    pub id: String,
    /// True when the id was already published within the dedupe window with the same content
    /// (nothing was stored); other content is refused with a conflict instead.
    pub duplicate: bool,
    /// The queues the message was stored in.
    pub queues: Vec<String>,
}

/// Why a message became a dead letter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeadReason {
    /// Refused on publish.
    Invalid {
        /// The validation problems.
        issues: Vec<Problem>,
        /// Who published it, as the hub authenticated them (absent when published in process,
        /// or kept before it was recorded): the document's own sender is only a claim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        publisher: Option<String>,
    },
    /// Its expiration time passed before a handler got it.
    Expired {
        /// The expiration time, Unix milliseconds.
        expired_at_ms: i64,
    },
    /// It was delivered `attempts` times without being acknowledged.
    MaxDeliver {
        /// Deliveries made.
        attempts: u32,
    },
    /// No recipient and no binding matched.
    NoRoute,
    /// Its handler failed on each of `attempts` deliveries and gave up (retries spent, no
    /// escalation target): settled as a dead letter by the worker.
    Failed {
        /// Deliveries made.
        attempts: u32,
        /// The handler's last error.
        error: String,
    },
}

impl DeadReason {
    /// A short name: `invalid`, `expired`, `max_deliver`, `no_route`, `failed`.
    pub fn kind(&self) -> &'static str {
        match self {
            DeadReason::Invalid { .. } => "invalid",
            DeadReason::Expired { .. } => "expired",
            DeadReason::MaxDeliver { .. } => "max_deliver",
            DeadReason::NoRoute => "no_route",
            DeadReason::Failed { .. } => "failed",
        }
    }
}

/// A message that could not be delivered, with its original bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeadLetter {
    /// Id of the dead letter (backend-assigned).
    pub id: String,
    /// The message id, when it could be read.
    pub message_id: Option<String>,
    /// The queue the message was taken from (none when refused on publish).
    pub queue: Option<String>,
    /// Why.
    pub reason: DeadReason,
    /// The bytes exactly as published.
    pub bytes: Vec<u8>,
    /// The routing keys, when the message had been accepted.
    pub envelope: Option<Envelope>,
    /// When it became a dead letter, Unix ms (none for a letter a NATS or Redis store kept
    /// before the time was recorded).
    pub at_ms: Option<i64>,
}

/// What a `handle_once` handler did, committed together with the message id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Effect {
    /// A record of the effect (e.g. the state change), kept per handler.
    pub record: Vec<u8>,
    /// Messages to publish as part of the effect (an outbox).
    pub publish: Vec<Envelope>,
}

/// A committed effect of a handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectRecord {
    /// The handler name.
    pub handler: String,
    /// The message whose handling produced it.
    pub message_id: String,
    /// The record the handler returned.
    pub record: Vec<u8>,
}

/// One entry of a conversation's event log.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    /// Position in the conversation, from 1; a reader resumes after the last one it saw.
    pub seq: u64,
    /// The message.
    pub envelope: Envelope,
}

/// A stored message as the store reads it back, with when the store accepted it.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    /// The message.
    pub envelope: Envelope,
    /// When the store accepted its publish, Unix milliseconds (the store's clock, not the
    /// document's own `timestamp`).
    pub published_ms: i64,
}

/// A task or conversation the bus has seen: how many messages it logged and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrackSummary {
    /// The task id or conversation id.
    pub id: String,
    /// Messages logged under it (a replayed message counts again).
    pub messages: u64,
    /// When its first message was published, Unix milliseconds.
    pub first_ms: i64,
    /// When its latest message was published, Unix milliseconds.
    pub last_ms: i64,
}

/// The outcome of `handle_once`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    /// The handler ran and its effect was committed.
    Applied,
    /// The message had already been handled; the handler did not run again.
    AlreadyDone,
}

/// The columns a SQL store keeps a dead letter's reason and envelope in: the reason as JSON, and
/// the envelope's keys as JSON without its bytes (a column of their own).
pub(crate) fn dead_letter_columns(
    reason: &DeadReason,
    envelope: Option<&Envelope>,
) -> crate::error::BusResult<(String, Option<String>)> {
    let reason = serde_json::to_string(reason).map_err(stored_json_error)?;
    let envelope = envelope
        .map(|e| {
            let mut keys = e.clone();
            keys.bytes = bytes::Bytes::new();
            serde_json::to_string(&keys)
        })
        .transpose()
        .map_err(stored_json_error)?;
    Ok((reason, envelope))
}

/// A dead letter's envelope read back from [`dead_letter_columns`]' keys and its bytes.
pub(crate) fn dead_letter_envelope(
    keys: Option<&str>,
    bytes: &[u8],
) -> crate::error::BusResult<Option<Envelope>> {
    keys.map(serde_json::from_str::<Envelope>)
        .transpose()
        .map_err(stored_json_error)
        .map(|e| {
            e.map(|mut e| {
                e.bytes = bytes.to_vec().into();
                e
            })
        })
}

/// A JSON column a store wrote that does not parse back.
pub(crate) fn stored_json_error(e: serde_json::Error) -> crate::error::BusError {
    crate::error::BusError::Corrupt(format!("a stored JSON column does not parse: {e}"))
}
