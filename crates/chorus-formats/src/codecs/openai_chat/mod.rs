//! OpenAI Chat Completions: requests, responses and streamed chunks, with `reasoning_content`.

mod decode;
mod direct;
mod encode;
mod response;
mod response_encode;
#[cfg(test)]
mod tests;

use chorus_core::Conversation;
use serde_json::Value;

use crate::capability::Capabilities;
use crate::codec::Codec;
use crate::common::call_ids;
use crate::common::json::{describe, parse};
use chorus_core::Problem;

use crate::error::Error;
use crate::format::Format;
use crate::loss::{Encoded, Losses};
use crate::options::EncodeOptions;

pub use response::{StreamAccumulator, decode_response};
use response_encode::encode_response;

/// The Chat Completions codec: requests, `chat.completion` responses and streamed chunks in;
/// requests out.
pub struct OpenAiChat;

impl Codec for OpenAiChat {
    const FORMAT: Format = Format::OpenAiChat;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = Value;

    /// Decodes a Chat Completions JSON value (request, response or array of chunks).
    fn decode(document: Value) -> Result<Conversation, Problem> {
        match &document {
            Value::Object(map) if map.contains_key("messages") => decode::request(document),
            Value::Object(map) if map.contains_key("choices") => decode_response(document),
            Value::Array(_) => {
                let mut stream = StreamAccumulator::new();
                for chunk in document.as_array().into_iter().flatten() {
                    stream.push(chunk)?;
                }
                stream.finish()
            }
            other => Err(Problem::expected(
                "",
                "a request with `messages`, a response with `choices`, or an array of chunks",
                describe(other),
            )),
        }
    }

    /// Encodes a conversation as a Chat Completions request; names are carried as they are.
    fn encode(conversation: &Conversation, _: &EncodeOptions) -> Result<Encoded<Value>, Error> {
        Ok(request(conversation))
    }

    /// Decodes Chat Completions JSON text: a request, a `chat.completion` response, an array of
    /// `chat.completion.chunk` objects, or server-sent events text of chunks.
    fn decode_str(input: &str) -> Result<Conversation, Problem> {
        if input.trim_start().starts_with("data:") {
            let mut stream = StreamAccumulator::new();
            stream.push_sse(input)?;
            return stream.finish();
        }
        if let Some(mut conversation) = direct::request(input) {
            call_ids::fill(&mut conversation.messages);
            return Ok(conversation);
        }
        Self::decode(parse(input)?)
    }
}

/// The Chat Completions response codec: a `chat.completion` object (or its chunks) holding the
/// assistant messages of a conversation.
pub struct OpenAiChatResponse;

impl Codec for OpenAiChatResponse {
    const FORMAT: Format = Format::OpenAiChatResponse;
    const CAPABILITIES: Capabilities = RESPONSE_CAPABILITIES;
    type Document = Value;

    /// Decodes a `chat.completion` object or an array of chunks; a request is refused.
    fn decode(document: Value) -> Result<Conversation, Problem> {
        match document {
            Value::Object(map) if !map.contains_key("choices") => Err(Problem::expected(
                "/choices",
                "a chat.completion response with `choices`",
                if map.contains_key("messages") {
                    "a request (`messages`)".to_owned()
                } else {
                    "an object without `choices`".to_owned()
                },
            )
            .with_hint("a request is read with `--from openai-chat`")),
            value => OpenAiChat::decode(value),
        }
    }

    /// Encodes the assistant messages of a conversation as a `chat.completion` object.
    fn encode(conversation: &Conversation, _: &EncodeOptions) -> Result<Encoded<Value>, Error> {
        Ok(encode_response(conversation))
    }

    /// Decodes a `chat.completion` object, an array of chunks or server-sent events text of
    /// chunks; a request is refused.
    fn decode_str(input: &str) -> Result<Conversation, Problem> {
        if input.trim_start().starts_with("data:") {
            return OpenAiChat::decode_str(input);
        }
        Self::decode(parse(input)?)
    }
}

/// Encodes a conversation as a Chat Completions request body; names are carried as they are.
pub fn request(conversation: &Conversation) -> Encoded<Value> {
    Losses::collect(|losses| encode::request(conversation, losses))
}

/// What Chat Completions carries.
const CAPABILITIES: Capabilities = Capabilities {
    format: OpenAiChat::FORMAT.id(),
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
const RESPONSE_CAPABILITIES: Capabilities = Capabilities {
    format: OpenAiChatResponse::FORMAT.id(),
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
