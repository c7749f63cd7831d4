//! chorus' own JSON: a conversation object (or a bare array of messages); the identity codec.

use chorus_core::{Conversation, Message};
use serde_json::Value;

use crate::capability::Capabilities;
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
    let value = crate::registry::parse_json(input)?;
    if value.is_array() {
        let messages: Vec<Message> = from_value(value, "")?;
        return Ok(Conversation {
            messages,
            ..Conversation::default()
        });
    }
    from_value(value, "")
}

/// Deserializes a chorus type, placing an error at its JSON pointer below `base`.
pub fn from_value<T: serde::de::DeserializeOwned>(
    value: Value,
    base: &str,
) -> Result<T, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let pointer = format!("{base}{}", pointer_of(e.path()));
        let inner = e.into_inner();
        let mut err = DecodeError::new(pointer, "a valid chorus value", inner.to_string());
        if inner.to_string().contains("arguments") || inner.to_string().contains("expected a string") {
            err = err.hint("tool-call `arguments` must be a JSON string, e.g. \"{\\\"city\\\":\\\"Paris\\\"}\", not an object");
        }
        err
    })
}

fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => {
                out.push_str(&format!("/{}", crate::loss::pointer_segment(key)))
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
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
