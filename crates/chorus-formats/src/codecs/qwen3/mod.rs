//! Qwen3 ChatML text: rendered byte for byte as the Qwen3 chat template does, and parsed back
//! (including bare completions with `<think>` and `<tool_call>`).

mod decode;
mod encode;
#[cfg(test)]
mod tests;

use chorus_core::{Conversation, Message};

use crate::capability::Capabilities;
use crate::codec::Codec;
use chorus_core::Problem;

use crate::error::Error;
use crate::format::Format;
use crate::loss::{Encoded, Losses};
use crate::options::EncodeOptions;

/// The Qwen3 codec: ChatML text as the Qwen3 chat template renders it, and completions.
pub struct Qwen3;

impl Codec for Qwen3 {
    const FORMAT: Format = Format::Qwen3;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = String;

    /// Parses rendered Qwen3 text (or a bare completion) into a conversation.
    fn decode(document: String) -> Result<Conversation, Problem> {
        decode::conversation(&document)
    }

    /// Renders a conversation as the Qwen3 template does, with the losses.
    fn encode(
        conversation: &Conversation,
        options: &EncodeOptions,
    ) -> Result<Encoded<String>, Error> {
        Ok(Losses::collect(|losses| {
            encode::render(conversation, options, losses)
        }))
    }
}

impl Qwen3 {
    /// Parses one Qwen3 completion into an assistant message: reasoning, content and tool calls.
    pub fn parse_completion(text: &str) -> Message {
        decode::assistant(text, &mut 0)
    }
}

/// First lines of the tool section of the system prompt, up to `<tools>`.
const TOOLS_HEADER: &str = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>";

/// The end of the tool section, closing the system turn.
const TOOLS_FOOTER: &str = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n";

/// What Qwen3 text carries.
const CAPABILITIES: Capabilities = Capabilities {
    format: Qwen3::FORMAT.id(),
    describes: "Qwen3 ChatML text as its chat template renders it (Hermes <tool_call>/<tool_response>, <think>)",
    roles: &[
        "system",
        "user",
        "assistant",
        "tool (as <tool_response> in a user turn)",
    ],
    parts: &["text (joined into one string)"],
    tool_results: "text only",
    names: "no: policy prefix (`name: text`) or <history> fold",
    citations: "no (anchors stay in the text)",
    reasoning: "<think> block, rendered only for assistant turns after the last user query",
    downgrades: &[
        "tool definitions go into the system prompt as JSON lines",
        "call ids are not carried; parsing numbers calls call_0, call_1, ... and pairs results by position",
        "images, audio and files are dropped; data parts are written as JSON text",
    ],
};
