//! Google Gemini `generateContent`: `system_instruction`, `contents` (user/model) and parts, in
//! snake_case or camelCase keys (the spelling a request was given in is the one written back).

mod decode;
mod decode_parts;
mod encode;
mod parts;
mod spelling;
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

/// The Gemini `generateContent` codec: requests and responses.
pub struct Gemini;

impl Codec for Gemini {
    const FORMAT: Format = Format::Gemini;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = Value;

    /// Decodes a `generateContent` request or response.
    fn decode(document: Value) -> Result<Conversation, Problem> {
        decode::conversation(&document)
    }

    /// Encodes a conversation as a `generateContent` request.
    fn encode(
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<Value>, Error> {
        Ok(Losses::collect(|losses| {
            encode::request(conversation, options, losses)
        }))
    }
}

/// What `generateContent` carries.
const CAPABILITIES: Capabilities = Capabilities {
    format: Gemini::FORMAT.id(),
    describes: "Google Gemini generateContent request (system_instruction, contents, tools) and response",
    roles: &[
        "system (system_instruction)",
        "user",
        "assistant (model)",
        "tool (function_response parts)",
    ],
    parts: &[
        "text",
        "reasoning (thought parts with thought_signature)",
        "image_url (inline_data or file_data)",
        "input_audio (inline_data)",
        "file (inline_data or file_data)",
        "other Gemini parts (kept)",
    ],
    tool_results: "a JSON object (function_response.response; error results under its `error` key) plus media parts after it",
    names: "no: policy prefix (`name: text`) or <history> fold; tool results carry the function name",
    citations: "no (citationMetadata of responses kept in metadata)",
    reasoning: "thought parts with thought_signature",
    downgrades: &[
        "a tool result that is not a JSON object is wrapped as {\"result\": text}",
        "call ids are optional; calls without one are numbered call_0, call_1, ... and results pair by name",
        "system and developer messages go to system_instruction",
        "data parts are written as JSON text; image rotation applied to base64 images",
    ],
};
