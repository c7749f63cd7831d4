//! AgentScope `Msg` JSON (`to_dict` / `from_dict`) with its content blocks.

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

/// Under `x-agentscope`: the name of the Msg that held a tool result, when not `system`.
pub const MSG_NAME: &str = "msg_name";

/// Under `x-agentscope`: the role of the Msg that held a tool result, when not `system`.
pub const MSG_ROLE: &str = "msg_role";

/// Under `x-agentscope`: unknown fields of the Msg that held a tool result.
pub const MSG_FIELDS: &str = "msg_fields";

/// The AgentScope codec: `Msg` dicts as `to_dict` writes them.
pub struct AgentScope;

impl Codec for AgentScope {
    const FORMAT: Format = Format::AgentScope;
    const CAPABILITIES: Capabilities = CAPABILITIES;
    type Document = Value;

    /// Decodes a Msg dict, an array of them, or `{"messages": [...]}`.
    fn decode(document: Value) -> Result<Conversation, Problem> {
        decode::conversation(&document)
    }

    /// Encodes a conversation as an array of Msg dicts; names are always carried.
    fn encode(
        conversation: &Conversation,
        _options: &EncodeOptions,
    ) -> Result<Encoded<Value>, Error> {
        Ok(Losses::collect(|losses| {
            encode::messages(conversation, losses)
        }))
    }
}

/// What AgentScope Msg carries.
const CAPABILITIES: Capabilities = Capabilities {
    format: AgentScope::FORMAT.id(),
    describes: "AgentScope Msg dicts (to_dict/from_dict): id, name, role, content blocks, metadata, timestamp",
    roles: &[
        "system",
        "user",
        "assistant",
        "tool (tool_result blocks in a system Msg)",
    ],
    parts: &[
        "text",
        "reasoning (thinking)",
        "image_url (image block, base64 or URL)",
        "input_audio (audio block)",
        "video and other blocks (kept)",
    ],
    tool_results: "string or blocks (tool_result.output)",
    names: "yes (required; the role is used when a message has none)",
    citations: "no (metadata keeps citation_map as given)",
    reasoning: "thinking blocks, no signature",
    downgrades: &[
        "tool results travel as tool_result blocks in a Msg named `system`",
        "files are dropped; data parts are written as JSON text",
        "Unix created_at is dropped (AgentScope timestamps are strings)",
    ],
};
