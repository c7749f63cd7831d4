//! AgentScope `Msg` JSON (`to_dict` / `from_dict`) with its content blocks.

pub mod decode;
pub mod encode;
#[cfg(test)]
mod tests;

use chorus_core::Conversation;
use serde_json::Value;

use crate::capability::Capabilities;
use crate::error::DecodeError;
use crate::loss::{Encoded, Losses};
use crate::options::EncodeOptions;

/// Under `x-agentscope`: the name of the Msg that held a tool result, when not `system`.
pub const MSG_NAME: &str = "msg_name";

/// Under `x-agentscope`: the role of the Msg that held a tool result, when not `system`.
pub const MSG_ROLE: &str = "msg_role";

/// Under `x-agentscope`: unknown fields of the Msg that held a tool result.
pub const MSG_FIELDS: &str = "msg_fields";

/// What AgentScope Msg carries.
pub const CAPABILITIES: Capabilities = Capabilities {
    format: "agentscope",
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

/// Decodes a Msg dict, an array of them, or `{"messages": [...]}`.
pub fn decode(value: &Value) -> Result<Conversation, DecodeError> {
    decode::decode(value)
}

/// Encodes a conversation as an array of Msg dicts; names are always carried.
pub fn encode(conversation: &Conversation, _options: &EncodeOptions) -> Encoded<Value> {
    let mut losses = Losses::default();
    let value = encode::messages(conversation, &mut losses);
    losses.finish(value)
}
