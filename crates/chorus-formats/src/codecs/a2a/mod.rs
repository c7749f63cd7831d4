//! A2A (Agent2Agent) `Message` with text, file and data parts; a handoff packet is a data part.

mod decode;
mod encode;
#[cfg(test)]
mod tests;

use chorus_core::{ContentPart, Conversation, DataPart, HandoffPacket};
use serde_json::Value;

use crate::capability::Capabilities;
use crate::codec::Codec;
use chorus_core::Problem;

use crate::error::Error;
use crate::format::Format;
use crate::loss::{Encoded, Losses};
use crate::options::EncodeOptions;

/// The metadata key under which chorus-only fields travel (A2A's extension point).
const CHORUS: &str = "chorus";

/// The `kind` of a chorus data part that holds a handoff packet.
const HANDOFF_KIND: &str = "handoff";

/// The A2A codec: an A2A message, an array of them, or a task's history.
pub struct A2a;

impl Codec for A2a {
    const FORMAT: Format = Format::A2a;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = Value;

    /// Decodes an A2A message, an array of them, or a task's history.
    fn decode(document: Value) -> Result<Conversation, Problem> {
        decode::conversation(&document)
    }

    /// Encodes a conversation as an array of A2A messages.
    fn encode(conversation: &Conversation, _: &EncodeOptions) -> Result<Encoded<Value>, Error> {
        Ok(Losses::collect(|losses| {
            encode::messages(conversation, losses)
        }))
    }
}

/// The chorus part type an A2A part is read as when its metadata does not say.
fn inferred_type(part: &Value) -> &'static str {
    let file = part.get("file");
    let mime = file
        .and_then(|f| f.get("mimeType"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let bytes = file.and_then(|f| f.get("bytes")).is_some();
    match part.get("kind").and_then(Value::as_str) {
        Some("file") if mime.starts_with("image/") => "image_url",
        Some("file") if mime.starts_with("audio/") && bytes => "input_audio",
        Some("file") => "file",
        Some("data") => "data",
        _ => "text",
    }
}

impl A2a {
    /// A chorus data part carrying a handoff packet, as it travels in an A2A data part.
    pub fn handoff_part(packet: &HandoffPacket) -> ContentPart {
        ContentPart::Data(DataPart {
            kind: Some(HANDOFF_KIND.into()),
            data: serde_json::to_value(packet).unwrap_or(Value::Null),
            ..DataPart::default()
        })
    }

    /// The handoff packets found in a conversation's data parts (with
    /// `protocol: harmony_handoff_v1`).
    pub fn handoff_packets(conversation: &Conversation) -> Vec<HandoffPacket> {
        conversation
            .messages
            .iter()
            .flat_map(|m| m.parts())
            .filter_map(|p| match p {
                ContentPart::Data(d)
                    if d.data.get("protocol").and_then(Value::as_str)
                        == Some("harmony_handoff_v1") =>
                {
                    serde_json::from_value(d.data).ok()
                }
                _ => None,
            })
            .collect()
    }
}

/// What A2A messages carry.
const CAPABILITIES: Capabilities = Capabilities {
    format: A2a::FORMAT.id(),
    describes: "A2A Message objects (kind, messageId, role user/agent, text/file/data parts, metadata)",
    roles: &[
        "user",
        "assistant (agent)",
        "system, developer, tool (in metadata.chorus.role)",
    ],
    parts: &[
        "text",
        "image_url, input_audio, file (file parts: bytes or uri)",
        "data",
        "reasoning and others (in metadata.chorus)",
    ],
    tool_results: "any parts; the call id travels in metadata.chorus",
    names: "in metadata.chorus",
    citations: "in metadata.chorus",
    reasoning: "text parts marked in metadata.chorus",
    downgrades: &[
        "chorus-only fields (tool calls, names, ids, metadata) travel in metadata.chorus: A2A peers that do not read it see only the parts",
        "image rotation is applied to base64 images; reported as lost for URL images",
        "a handoff packet travels as a data part",
    ],
};
