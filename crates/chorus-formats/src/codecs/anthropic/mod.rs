//! Anthropic Messages API: top-level `system`, content blocks, tool use and results, thinking.

mod blocks;
mod citations;
mod decode;
mod encode;
#[cfg(test)]
mod tests;

use chorus_core::Conversation;
use serde_json::Value;

use crate::capability::Capabilities;
use crate::codec::Codec;
use chorus_core::Problem;

use crate::error::Error;
use crate::format::Format;
use crate::loss::{Encoded, Losses};
use crate::options::EncodeOptions;

/// The Anthropic Messages codec: requests and responses.
pub struct Anthropic;

impl Codec for Anthropic {
    const FORMAT: Format = Format::Anthropic;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = Value;

    /// Decodes a Messages request or response.
    fn decode(document: Value) -> Result<Conversation, Problem> {
        decode::conversation(&document)
    }

    /// Encodes a conversation as a Messages request.
    fn encode(
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<Value>, Error> {
        Ok(Losses::collect(|losses| {
            encode::request(conversation, options, losses)
        }))
    }
}

/// Whether a tool message holds a seed-000 error result (`{"status": "error", ...}`), which the
/// Messages API flags with `is_error: true` on its `tool_result` block.
fn holds_error(m: &chorus_core::Message) -> bool {
    matches!(
        chorus_core::ToolOutcome::from_text(&m.text()),
        chorus_core::ToolOutcome::Error { .. }
    )
}

/// What the Messages API carries.
const CAPABILITIES: Capabilities = Capabilities {
    format: Anthropic::FORMAT.id(),
    describes: "Anthropic Messages API request (system, messages, tools) and response",
    roles: &[
        "system (top-level)",
        "user",
        "assistant",
        "tool (tool_result blocks in the next user turn)",
    ],
    parts: &[
        "text",
        "reasoning (thinking with signature)",
        "image_url (base64 or URL)",
        "file (document: base64, text, URL, file id)",
        "other Anthropic blocks (kept)",
    ],
    tool_results: "text, images and documents; is_error kept, and set for error results",
    names: "no: policy prefix (`name: text`) or <history> fold",
    citations: "text-block citations ⇄ [cit_..] anchors + metadata.citation_map (Anthropic location types only)",
    reasoning: "thinking blocks with signature; redacted_thinking kept",
    downgrades: &[
        "tool results open the next user turn; consecutive same-role turns are merged",
        "system and developer messages go to the top-level system prompt",
        "audio is dropped; data parts are written as JSON text",
        "image rotation is applied to base64 images; reported as lost for URL images",
    ],
};
