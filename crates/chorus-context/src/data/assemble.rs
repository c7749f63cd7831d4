//! Turning a conversation with data parts into what the model sees: text unchanged, all data
//! parts merged and rendered into one user text message.

use chorus_core::{Content, ContentPart, Message, Nullable, Role};

use super::merge::{data_parts, merge_parts};
use super::render::render_all;

/// Replaces every data part with one rendered user message, placed right after the message that
/// held the first data part; messages left without content are dropped. Without data parts the
/// messages come back unchanged.
pub fn assemble(messages: &[Message]) -> Vec<Message> {
    let merged = merge_parts(data_parts(messages));
    if merged.is_empty() {
        return messages.to_vec();
    }
    let rendered = Message::with_parts(Role::User, vec![ContentPart::text(render_all(&merged))]);
    let mut out = Vec::with_capacity(messages.len() + 1);
    let mut placed = false;
    for message in messages {
        let Some(Content::Parts(parts)) = message.content() else {
            out.push(message.clone());
            continue;
        };
        let kept: Vec<ContentPart> = parts
            .iter()
            .filter(|p| !matches!(p, ContentPart::Data(_)))
            .cloned()
            .collect();
        if kept.len() == parts.len() {
            out.push(message.clone());
            continue;
        }
        if !kept.is_empty() || !message.calls().is_empty() {
            let mut stripped = message.clone();
            stripped.content = Nullable::Value(Content::Parts(kept));
            out.push(stripped);
        }
        if !placed {
            out.push(rendered.clone());
            placed = true;
        }
    }
    out
}

/// True when the message carries at least one data part.
pub fn has_data(message: &Message) -> bool {
    matches!(message.content(), Some(Content::Parts(parts)) if parts.iter().any(|p| matches!(p, ContentPart::Data(_))))
}
