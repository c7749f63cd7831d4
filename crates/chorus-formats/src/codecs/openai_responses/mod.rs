//! OpenAI Responses API: message, function_call, function_call_output and reasoning items.

mod decode;
mod encode;
mod parts;
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

/// Marks (under `x-openai-responses`) a system message that came from `instructions`.
pub const INSTRUCTIONS: &str = "instructions";

/// Marks a message that holds one Responses item chorus has no type for.
pub const ITEM: &str = "item";

/// The OpenAI Responses codec: requests and responses.
pub struct OpenAiResponses;

impl Codec for OpenAiResponses {
    const FORMAT: Format = Format::OpenAiResponses;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = Value;

    /// Decodes a Responses request or response.
    fn decode(document: Value) -> Result<Conversation, Problem> {
        decode::conversation(&document)
    }

    /// Encodes a conversation as a Responses request.
    fn encode(
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<Value>, Error> {
        Ok(Losses::collect(|losses| {
            encode::request(conversation, options, losses)
        }))
    }
}

/// What the Responses API carries.
const CAPABILITIES: Capabilities = Capabilities {
    format: OpenAiResponses::FORMAT.id(),
    describes: "OpenAI Responses API request (instructions, input items, tools) and response output items",
    roles: &[
        "system",
        "developer",
        "user",
        "assistant",
        "tool (function_call_output)",
    ],
    parts: &[
        "text (input_text/output_text)",
        "reasoning (reasoning item: summary, encrypted_content)",
        "image_url (input_image with detail)",
        "input_audio",
        "file (input_file)",
        "other items (kept)",
    ],
    tool_results: "text or input_text/input_image/input_file parts",
    names: "no: policy prefix (`name: text`) or <history> fold",
    citations: "no (output_text annotations kept)",
    reasoning: "reasoning items with summary and encrypted_content; reasoning without the item id the API gave it is dropped (the API refuses it)",
    downgrades: &[
        "an assistant turn is written as reasoning items, a message item, then function_call items",
        "data parts are written as JSON text; image rotation applied to base64 images",
    ],
};
