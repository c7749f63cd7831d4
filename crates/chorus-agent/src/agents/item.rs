//! What flows between agents: a chorus message or a seed-003 handoff.

use chorus_core::{HandoffMessage, Message};
use serde_json::Value;

/// A chorus message or a handoff, as published on the bus and written to the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A chorus message (`recipient` says who gets it, `name` who sent it).
    Message(Message),
    /// A seed-003 handoff.
    Handoff(HandoffMessage),
}

impl Item {
    /// Reads a published document: a message has a `role`, anything else is read as a handoff.
    pub fn from_json(value: &Value) -> Result<Item, String> {
        if value.get("role").is_some() {
            serde_json::from_value(value.clone())
                .map(Item::Message)
                .map_err(|e| format!("not a chorus message: {e}"))
        } else {
            serde_json::from_value(value.clone())
                .map(Item::Handoff)
                .map_err(|e| format!("not a handoff message: {e}"))
        }
    }

    /// The JSON document.
    pub fn to_json(&self) -> Value {
        match self {
            Item::Message(m) => serde_json::to_value(m),
            Item::Handoff(h) => serde_json::to_value(h),
        }
        .unwrap_or(Value::Null)
    }

    /// The task it belongs to: a handoff's `metadata.task_id`, a message's `metadata.task_id`.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            Item::Message(m) => m
                .metadata
                .as_ref()
                .and_then(|meta| meta.extra.get("task_id"))
                .and_then(Value::as_str),
            Item::Handoff(h) => Some(h.metadata.task_id.as_str()),
        }
    }

    /// The sender: a message's `name`, a handoff's `sender_id`.
    pub fn sender(&self) -> Option<&str> {
        match self {
            Item::Message(m) => m.name.as_deref(),
            Item::Handoff(h) => Some(&h.metadata.sender_id),
        }
    }

    /// The recipients.
    pub fn recipients(&self) -> Vec<String> {
        match self {
            Item::Message(m) => m.recipient.iter().cloned().collect(),
            Item::Handoff(h) => h
                .metadata
                .recipient_id
                .ids()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        }
    }

    /// The message id.
    pub fn id(&self) -> Option<&str> {
        match self {
            Item::Message(m) => m.id.as_deref(),
            Item::Handoff(h) => Some(&h.metadata.message_id),
        }
    }

    /// The id the journals know this item by: its message id, else a digest of its JSON (of
    /// the journal's key alphabet).
    pub fn journal_id(&self) -> String {
        match self.id() {
            Some(id) => id.to_owned(),
            None => key_digest(&self.to_json().to_string()),
        }
    }

    /// The handoff type, for handoffs.
    pub fn handoff_type(&self) -> Option<&str> {
        match self {
            Item::Message(_) => None,
            Item::Handoff(h) => Some(h.payload.handoff_type.as_str()),
        }
    }

    /// The text a person would read: a message's text, a handoff's summary or next steps.
    pub fn text(&self) -> String {
        match self {
            Item::Message(m) => m.text(),
            Item::Handoff(h) => h
                .payload
                .data
                .get("summary")
                .and_then(Value::as_str)
                .or(h.context.historical_data_summary.as_deref())
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// One line for progress output, e.g. `customer_service → technical_support ESCALATION`.
    pub fn describe(&self) -> String {
        let from = self.sender().unwrap_or("?");
        let to = self.recipients().join(",");
        match self {
            Item::Message(m) => {
                let text: String = m.text().chars().take(60).collect();
                format!("{from} → {to} message: {text}")
            }
            Item::Handoff(h) => format!("{from} → {to} {}", h.payload.handoff_type),
        }
    }
}

/// A short digest of `text` made of ASCII letters and digits, for journal keys.
pub(crate) fn key_digest(text: &str) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, text.as_bytes())
        .simple()
        .to_string()
}
