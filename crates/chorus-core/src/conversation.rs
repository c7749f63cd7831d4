//! A conversation: messages plus the tools the model may call.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::Message;
use crate::tool::ToolDefinition;

/// Messages in order and the tool definitions offered to the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Conversation {
    /// The messages, oldest first.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
