//! Message fields a target has no place for, reported in one way by every encoder.

use chorus_core::{Message, Role};

use crate::common::json::child;
use crate::loss::{Losses, Policy};

/// A chorus message field that some targets cannot carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `name`.
    Name,
    /// `id`.
    Id,
    /// `created_at`.
    CreatedAt,
    /// `channel`.
    Channel,
    /// `recipient`.
    Recipient,
    /// `metadata`.
    Metadata,
    /// `tool_call_id` on a message that is not a tool result.
    ToolCallId,
}

impl Field {
    fn key(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Id => "id",
            Field::CreatedAt => "created_at",
            Field::Channel => "channel",
            Field::Recipient => "recipient",
            Field::Metadata => "metadata",
            Field::ToolCallId => "tool_call_id",
        }
    }

    fn present(self, m: &Message) -> bool {
        match self {
            Field::Name => m.name.is_some(),
            Field::Id => m.id.is_some(),
            Field::CreatedAt => m.created_at.is_some(),
            Field::Channel => m.channel.is_some(),
            Field::Recipient => m.recipient.is_some(),
            Field::Metadata => m.metadata.is_some(),
            Field::ToolCallId => m.tool_call_id.is_some() && m.role != Role::Tool,
        }
    }
}

/// Reports each of `fields` that `m` has as dropped: `holder` (e.g. "Gemini contents") has none.
pub fn report_unsupported(
    m: &Message,
    at: &str,
    holder: &str,
    fields: &[Field],
    losses: &mut Losses,
) {
    for field in fields {
        if field.present(m) {
            let key = field.key();
            losses.push(
                child(at, key),
                Policy::Dropped,
                format!("{holder} have no `{key}`"),
            );
        }
    }
}
