//! chorus' own JSON: a conversation object (or a bare array of messages); the identity codec.

use chorus_core::{Conversation, Message};
use serde_json::Value;

use crate::capability::Capabilities;
use crate::common::json::{chorus_value, parse};
use crate::error::DecodeError;
use crate::loss::Encoded;

/// What chorus JSON carries: everything.
pub const CAPABILITIES: Capabilities = Capabilities {
    format: "chorus",
    describes: "chorus JSON: a conversation {messages, tools} or an array of messages (identity)",
    roles: &["system", "developer", "user", "assistant", "tool"],
    parts: &[
        "text",
        "reasoning",
        "image_url",
        "input_audio",
        "file",
        "data",
        "any other (kept)",
    ],
    tool_results: "text and any parts",
    names: "yes",
    citations: "metadata.citation_map with [cit_..] anchors",
    reasoning: "reasoning parts with signature",
    downgrades: &[],
};

/// Decodes chorus JSON text; errors carry the JSON pointer of the offending value.
pub fn decode_str(input: &str) -> Result<Conversation, DecodeError> {
    let value = parse(input)?;
    if value.is_array() {
        let messages: Vec<Message> = chorus_value(value, "")?;
        return Ok(Conversation {
            messages,
            ..Conversation::default()
        });
    }
    chorus_value(value, "")
}

/// Encodes a conversation as chorus JSON; nothing is ever lost.
pub fn encode(conversation: &Conversation) -> Encoded<Value> {
    Encoded {
        value: serde_json::to_value(conversation).unwrap_or(Value::Null),
        losses: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_point_at_the_offending_value() {
        let input = r#"{"messages":[{"role":"user","content":"hi"},{"role":"wizard"}]}"#;
        let err = decode_str(input).unwrap_err();
        assert_eq!(err.pointer, "/messages/1/role");
    }

    #[test]
    fn a_bare_array_is_a_conversation() {
        let conv = decode_str(r#"[{"role":"user","content":"hi","x":1}]"#).unwrap();
        assert_eq!(conv.messages[0].text(), "hi");
        let back = encode(&conv).value;
        assert_eq!(back["messages"][0]["x"], 1);
    }
}
