//! The Universal Message Object (seed 000, A.1): a superset of a Chat Completions message.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::metadata::Metadata;
use crate::nullable::Nullable;
use crate::parts::ContentPart;
use crate::tool::{ToolCall, ToolOutcome};

/// Who speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System instructions.
    System,
    /// Developer instructions (Harmony, newer OpenAI models).
    Developer,
    /// A person or the application speaking for one.
    User,
    /// The model or an agent.
    Assistant,
    /// A tool result.
    Tool,
}

impl Role {
    /// The role as written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// Message content: a plain string or a list of parts; the form given is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Multimodal parts.
    Parts(Vec<ContentPart>),
}

/// When a message was created: Unix seconds (seed 000) or an ISO 8601 string (AgentScope).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CreatedAt {
    /// Seconds since the Unix epoch.
    Unix(i64),
    /// A date-time string.
    Text(String),
}

/// The channels of the Harmony format.
pub mod channel {
    /// Chain of thought, not shown to users.
    pub const ANALYSIS: &str = "analysis";
    /// Tool calls and preambles.
    pub const COMMENTARY: &str = "commentary";
    /// The answer users see.
    pub const FINAL: &str = "final";
}

/// One message of a conversation; unknown keys are kept in `extra` and written back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Unique id, for references and rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Who speaks.
    pub role: Role,
    /// Speaker name; required when several agents talk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Creation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<CreatedAt>,
    /// The content; `null` and absent are kept apart.
    #[serde(default, skip_serializing_if = "Nullable::is_absent")]
    pub content: Nullable<Content>,
    /// Calls the assistant asks for; `null` (as SDKs write it) and absent are kept apart.
    #[serde(default, skip_serializing_if = "Nullable::is_absent")]
    pub tool_calls: Nullable<Vec<ToolCall>>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Harmony channel: `analysis`, `commentary`, `final` or another name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Who the message is addressed to (Harmony `to=`, or an agent id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    /// Cost, latency, tracing, safety and citations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message with `role` and plain-text `content`.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message {
            id: None,
            role,
            name: None,
            created_at: None,
            content: Nullable::Value(Content::Text(text.into())),
            tool_calls: Nullable::Absent,
            tool_call_id: None,
            channel: None,
            recipient: None,
            metadata: None,
            extra: Map::new(),
        }
    }

    /// A message with `role` and a list of parts.
    pub fn with_parts(role: Role, parts: Vec<ContentPart>) -> Self {
        Message {
            content: Nullable::Value(Content::Parts(parts)),
            ..Message::new(role, "")
        }
    }

    /// The content parts; a plain string counts as one text part.
    pub fn parts(&self) -> Vec<ContentPart> {
        match self.content() {
            Some(Content::Text(text)) => vec![ContentPart::text(text.clone())],
            Some(Content::Parts(parts)) => parts.clone(),
            None => Vec::new(),
        }
    }

    /// The content, if any (absent and `null` both give `None`).
    pub fn content(&self) -> Option<&Content> {
        self.content.value()
    }

    /// All text of the content joined, with parts that are not text left out.
    pub fn text(&self) -> String {
        match self.content() {
            Some(Content::Text(text)) => text.clone(),
            Some(Content::Parts(parts)) => parts.iter().filter_map(ContentPart::as_text).collect(),
            None => String::new(),
        }
    }

    /// All text of the content, its text parts joined by `separator` (a `"\n"` keeps
    /// `"Sunny"` and `"22 degrees"` apart where [`Message::text`] glues them).
    pub fn text_joined(&self, separator: &str) -> String {
        match self.content() {
            Some(Content::Text(text)) => text.clone(),
            Some(Content::Parts(parts)) => parts
                .iter()
                .filter_map(ContentPart::as_text)
                .collect::<Vec<_>>()
                .join(separator),
            None => String::new(),
        }
    }

    /// For a tool message, what its result says happened.
    pub fn tool_outcome(&self) -> Option<ToolOutcome> {
        (self.role == Role::Tool).then(|| ToolOutcome::from_text(&self.text()))
    }

    /// The tool calls, empty when there are none.
    pub fn calls(&self) -> &[ToolCall] {
        self.tool_calls.value().map_or(&[], Vec::as_slice)
    }
}
