//! chorus' own JSON: a conversation object (or a bare array of messages); the identity codec.

use chorus_core::{Conversation, Message};
use serde_json::Value;

use crate::capability::Capabilities;
use crate::codec::Codec;
use crate::common::json::chorus_value;
use chorus_core::Problem;

use crate::error::Error;
use crate::format::Format;
use crate::loss::Encoded;
use crate::options::EncodeOptions;

/// The identity codec: chorus' own JSON, a conversation object or a bare array of messages.
pub struct Chorus;

impl Codec for Chorus {
    const FORMAT: Format = Format::Chorus;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = Value;

    /// Decodes chorus JSON; errors carry the JSON pointer of the offending value.
    fn decode(document: Value) -> Result<Conversation, Problem> {
        if document.is_array() {
            let messages: Vec<Message> = chorus_value(document, "")?;
            return Ok(Conversation {
                messages,
                ..Conversation::default()
            });
        }
        chorus_value(document, "")
    }

    /// Encodes a conversation as chorus JSON; nothing is ever lost.
    fn encode(conversation: &Conversation, _: &EncodeOptions) -> Result<Encoded<Value>, Error> {
        Ok(Encoded {
            value: serde_json::to_value(conversation).unwrap_or(Value::Null),
            losses: Vec::new(),
        })
    }
}

/// What chorus JSON carries: everything.
const CAPABILITIES: Capabilities = Capabilities {
    format: Chorus::FORMAT.id(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_point_at_the_offending_value() {
        let input = r#"{"messages":[{"role":"user","content":"hi"},{"role":"wizard"}]}"#;
        let err = Chorus::decode_str(input).unwrap_err();
        assert_eq!(err.pointer, "/messages/1/role");
    }

    #[test]
    fn a_bare_array_is_a_conversation() {
        let conv = Chorus::decode_str(r#"[{"role":"user","content":"hi","x":1}]"#).unwrap();
        assert_eq!(conv.messages[0].text(), "hi");
        let back = Chorus::encode(&conv, &EncodeOptions::default())
            .unwrap()
            .value;
        assert_eq!(back["messages"][0]["x"], 1);
    }
}
