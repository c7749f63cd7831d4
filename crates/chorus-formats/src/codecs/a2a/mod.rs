//! A2A (Agent2Agent) v1.0 `Message` with text, file (`raw` or `url`) and data parts; v0.3 input
//! (`kind` discriminators, lower-case roles) is read too. A handoff packet is a data part.
//!
//! The codec works on JSON values rather than the `a2a-lf` crate's types: those structs drop keys
//! they do not know (chorus keeps them, principle 1), read only v1.0, and turn `raw` into bytes,
//! so a document would not come back as it was given.

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

/// The v1.0 role of a user's message (ProtoJSON enum name).
const ROLE_USER: &str = "ROLE_USER";

/// The v1.0 role of an agent's message.
const ROLE_AGENT: &str = "ROLE_AGENT";

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

/// The chorus part type an A2A part (v1.0 or v0.3) is read as when its metadata does not say.
fn inferred_type(part: &Value) -> &'static str {
    let view = FileView::of(part);
    let mime = view.mime.unwrap_or_default();
    match part_shape(part) {
        Shape::File if mime.starts_with("image/") => "image_url",
        Shape::File if mime.starts_with("audio/") && view.bytes.is_some() => "input_audio",
        Shape::File => "file",
        Shape::Data => "data",
        Shape::Text | Shape::Unknown => "text",
    }
}

/// Which member of the part oneof (v1.0) or which `kind` (v0.3) a part is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Text,
    File,
    Data,
    Unknown,
}

/// The shape of a part: v0.3 says it in `kind`, v1.0 by which content field is present.
fn part_shape(part: &Value) -> Shape {
    match part.get("kind").and_then(Value::as_str) {
        Some("text") => Shape::Text,
        Some("file") => Shape::File,
        Some("data") => Shape::Data,
        Some(_) => Shape::Unknown,
        None if part.get("text").is_some() => Shape::Text,
        None if part.get("raw").is_some() || part.get("url").is_some() => Shape::File,
        None if part.get("data").is_some() => Shape::Data,
        None => Shape::Unknown,
    }
}

/// A file part's fields, from v1.0 (`raw`/`url`/`mediaType`/`filename` on the part) or v0.3
/// (`file.bytes`/`file.uri`/`file.mimeType`/`file.name`).
struct FileView<'a> {
    mime: Option<&'a str>,
    bytes: Option<&'a str>,
    uri: Option<&'a str>,
    name: Option<&'a Value>,
}

impl<'a> FileView<'a> {
    fn of(part: &'a Value) -> Self {
        let text = |v: &'a Value, key: &str| v.get(key).and_then(Value::as_str);
        match part.get("file") {
            Some(file) if part.get("kind").is_some() => FileView {
                mime: text(file, "mimeType"),
                bytes: text(file, "bytes"),
                uri: text(file, "uri"),
                name: file.get("name"),
            },
            _ => FileView {
                mime: text(part, "mediaType"),
                bytes: text(part, "raw"),
                uri: text(part, "url"),
                name: part.get("filename"),
            },
        }
    }
}

impl A2a {
    /// The A2A extension a message declares (in `extensions`) when a data part holds a whole
    /// seed-003 handoff packet; chorus servers list it in their agent cards.
    pub const HANDOFF_EXTENSION: &'static str =
        "https://example.invalid/chorus/a2a/extensions/handoff/v1";

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
    describes: "A2A v1.0 Message objects (messageId, role ROLE_USER/ROLE_AGENT, text/raw/url/data parts, mediaType, metadata); v0.3 input read too",
    roles: &[
        "user",
        "assistant (agent)",
        "system, developer, tool (in metadata.chorus.role)",
    ],
    parts: &[
        "text",
        "image_url, input_audio, file (raw bytes or url, with mediaType and filename)",
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
        "a file known only by a provider file id becomes a data part naming the id",
        "v0.3 input (kind, user/agent, file.bytes/uri) is written back as v1.0",
    ],
};
