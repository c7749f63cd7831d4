//! Google Gemini `generateContent`: `system_instruction`, `contents` (user/model) and parts, in
//! snake_case or camelCase keys (the spelling a request was given in is the one written back).

pub mod decode;
mod decode_parts;
pub mod encode;
mod parts;
mod spelling;
#[cfg(test)]
mod tests;

use chorus_core::Conversation;
use serde_json::Value;

use crate::capability::Capabilities;
use crate::error::DecodeError;
use crate::loss::{Encoded, Losses};
use crate::options::EncodeOptions;

/// What `generateContent` carries.
pub const CAPABILITIES: Capabilities = Capabilities {
    format: "gemini",
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

/// Decodes a `generateContent` request or response.
pub fn decode(value: &Value) -> Result<Conversation, DecodeError> {
    decode::decode(value)
}

/// Encodes a conversation as a `generateContent` request.
pub fn encode(conversation: &Conversation, options: &EncodeOptions) -> Encoded<Value> {
    let mut losses = Losses::default();
    let value = encode::request(conversation, options, &mut losses);
    losses.finish(value)
}
