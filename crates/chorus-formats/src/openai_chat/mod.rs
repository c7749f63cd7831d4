//! OpenAI Chat Completions: requests, responses and streamed chunks, with `reasoning_content`.

pub mod decode;
mod direct;
pub mod encode;
pub mod response;
pub mod response_encode;
#[cfg(test)]
mod tests;

use chorus_core::Conversation;
use serde_json::Value;

use crate::capability::Capabilities;
use crate::common::call_ids;
use crate::common::json::{describe, parse};
use crate::error::DecodeError;
use crate::loss::{Encoded, Losses};
use crate::options::EncodeOptions;

pub use response::{StreamAccumulator, decode_response};
pub use response_encode::encode_response;

/// What Chat Completions carries.
pub const CAPABILITIES: Capabilities = Capabilities {
    format: "openai-chat",
    describes: "OpenAI Chat Completions request (messages, tools, tool_choice), response and stream chunks",
    roles: &["system", "developer", "user", "assistant", "tool"],
    parts: &[
        "text",
        "image_url (url, detail)",
        "input_audio (data, format)",
        "file (file_id, file_data, filename)",
        "unknown parts (kept)",
    ],
    tool_results: "text; media in tool results move to a user message after the tool results",
    names: "yes (`name` on messages)",
    citations: "no (citation_map dropped, anchors stay in the text)",
    reasoning: "`reasoning_content` on assistant messages (vLLM, DeepSeek, Qwen); no signature",
    downgrades: &[
        "images/audio/files returned by a tool move into a user message right after the tool results",
        "data parts are written as JSON text",
        "image rotation is applied to base64 images; reported as lost for URL images",
        "a tool result that comes late is moved up to follow its call",
    ],
};

/// What a Chat Completions response (`chat.completion`) carries.
pub const RESPONSE_CAPABILITIES: Capabilities = Capabilities {
    format: "openai-chat-response",
    describes: "OpenAI Chat Completions response (`chat.completion`: choices, usage), or its stream chunks",
    roles: &["assistant (one choice per message)"],
    parts: CAPABILITIES.parts,
    tool_results: "none (a response holds assistant messages only)",
    names: CAPABILITIES.names,
    citations: CAPABILITIES.citations,
    reasoning: CAPABILITIES.reasoning,
    downgrades: &[
        "messages other than assistant ones are dropped",
        "id, time, model, fingerprint and usage come from the first choice",
    ],
};

/// Decodes a Chat Completions response: a `chat.completion` object, an array of chunks or
/// server-sent events text; a request is refused.
pub fn decode_response_str(input: &str) -> Result<Conversation, DecodeError> {
    if input.trim_start().starts_with("data:") {
        return decode_str(input);
    }
    match parse(input)? {
        Value::Object(map) if !map.contains_key("choices") => Err(DecodeError::new(
            "/choices",
            "a chat.completion response with `choices`",
            if map.contains_key("messages") {
                "a request (`messages`)".to_owned()
            } else {
                "an object without `choices`".to_owned()
            },
        )
        .hint("a request is read with `--from openai-chat`")),
        value => decode(value),
    }
}

/// Decodes Chat Completions JSON text: a request, a `chat.completion` response, an array of
/// `chat.completion.chunk` objects, or server-sent events text of chunks.
pub fn decode_str(input: &str) -> Result<Conversation, DecodeError> {
    if input.trim_start().starts_with("data:") {
        let mut stream = StreamAccumulator::new();
        stream.push_sse(input)?;
        return stream.finish();
    }
    if let Some(mut conversation) = direct::request(input) {
        call_ids::fill(&mut conversation.messages);
        return Ok(conversation);
    }
    decode(parse(input)?)
}

/// Decodes a Chat Completions JSON value (request, response or array of chunks).
pub fn decode(value: Value) -> Result<Conversation, DecodeError> {
    match &value {
        Value::Object(map) if map.contains_key("messages") => decode::request(value),
        Value::Object(map) if map.contains_key("choices") => decode_response(value),
        Value::Array(_) => {
            let mut stream = StreamAccumulator::new();
            for chunk in value.as_array().into_iter().flatten() {
                stream.push(chunk)?;
            }
            stream.finish()
        }
        other => Err(DecodeError::new(
            "",
            "a request with `messages`, a response with `choices`, or an array of chunks",
            describe(other),
        )),
    }
}

/// Encodes a conversation as a Chat Completions request; names are carried as they are.
pub fn encode(conversation: &Conversation, _options: &EncodeOptions) -> Encoded<Value> {
    let mut losses = Losses::default();
    let value = encode::request(conversation, &mut losses);
    losses.finish(value)
}
