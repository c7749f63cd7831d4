//! The Harmony conversation model, serialized exactly as openai-harmony 0.0.8 serializes it.
//!
//! A field left out of the JSON is absent (`None`), never defaulted; unknown fields are ignored.
//! A message's `content` is written as a plain string when it is a single text part.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Who wrote a message.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The end user.
    User,
    /// The model.
    Assistant,
    /// The system message (model identity, reasoning effort, channels, built-in tools).
    System,
    /// The developer message (instructions and function tools).
    Developer,
    /// A tool's output; the author name is the tool (`functions.x`).
    Tool,
}

impl Role {
    /// The role as written in a header.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
            Role::Developer => "developer",
            Role::Tool => "tool",
        }
    }

    /// The role named `name`, if any.
    pub fn from_name(name: &str) -> Option<Role> {
        [
            Role::User,
            Role::Assistant,
            Role::System,
            Role::Developer,
            Role::Tool,
        ]
        .into_iter()
        .find(|role| role.as_str() == name)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The author of a message: a role and an optional name (for tools, the tool name).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Author {
    /// The author's role.
    pub role: Role,
    /// The author's name; for `tool` messages the tool (`functions.lookup_weather`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// One part of a message's content.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Content {
    /// Plain text.
    Text(TextContent),
    /// The structured content of a system message.
    SystemContent(SystemContent),
    /// The structured content of a developer message.
    DeveloperContent(DeveloperContent),
}

/// A text part.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TextContent {
    /// The text.
    pub text: String,
}

/// One Harmony message.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Message {
    /// Who wrote it.
    #[serde(flatten)]
    pub author: Author,
    /// Who it is addressed to (`functions.x` for a tool call, `assistant` for a tool result).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    /// Its content parts.
    #[serde(deserialize_with = "read_content", serialize_with = "write_content")]
    pub content: Vec<Content>,
    /// Its channel (`analysis`, `commentary`, `final`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Its content type (`<|constrain|>json`, `code`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

impl Message {
    /// A message from `role` with one content part.
    pub fn new(role: Role, content: impl Into<Content>) -> Self {
        Self {
            author: Author { role, name: None },
            recipient: None,
            content: vec![content.into()],
            channel: None,
            content_type: None,
        }
    }

    /// A tool-result message from tool `name` (`functions.x`).
    pub fn from_tool(name: impl Into<String>, content: impl Into<Content>) -> Self {
        let mut message = Self::new(Role::Tool, content);
        message.author.name = Some(name.into());
        message
    }

    /// This message on `channel`.
    pub fn with_channel(mut self, channel: impl Into<String>) -> Self {
        self.channel = Some(channel.into());
        self
    }

    /// This message addressed to `recipient`.
    pub fn with_recipient(mut self, recipient: impl Into<String>) -> Self {
        self.recipient = Some(recipient.into());
        self
    }

    /// This message with content type `content_type`.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }

    /// The concatenated text parts of the message.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl<T: Into<String>> From<T> for Content {
    fn from(text: T) -> Self {
        Content::Text(TextContent { text: text.into() })
    }
}

impl From<SystemContent> for Content {
    fn from(system: SystemContent) -> Self {
        Content::SystemContent(system)
    }
}

impl From<DeveloperContent> for Content {
    fn from(developer: DeveloperContent) -> Self {
        Content::DeveloperContent(developer)
    }
}

/// Reads `content` given either as a string or as a list of parts.
fn read_content<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Content>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged, expecting = "a string or a list of content parts")]
    enum StringOrParts {
        String(String),
        Parts(Vec<Content>),
    }
    Ok(match StringOrParts::deserialize(deserializer)? {
        StringOrParts::String(text) => vec![Content::Text(TextContent { text })],
        StringOrParts::Parts(parts) => parts,
    })
}

/// Writes a single text part as a plain string, anything else as a list.
fn write_content<S: Serializer>(content: &[Content], serializer: S) -> Result<S::Ok, S::Error> {
    match content {
        [Content::Text(text)] => serializer.serialize_str(&text.text),
        parts => parts.serialize(serializer),
    }
}

/// How much the model should reason.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReasoningEffort {
    /// `Reasoning: low`.
    Low,
    /// `Reasoning: medium`.
    Medium,
    /// `Reasoning: high`.
    High,
}

impl ReasoningEffort {
    /// The effort as written in the system message.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

/// The channels the model may use.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct ChannelConfig {
    /// The valid channels, in the order they are listed.
    pub valid_channels: Vec<String>,
    /// Whether every assistant message must name a channel.
    pub channel_required: bool,
}

/// A namespace of tools (`functions`, `browser`, `python`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ToolNamespaceConfig {
    /// The namespace name.
    pub name: String,
    /// A description written above the namespace.
    pub description: Option<String>,
    /// The tools in the namespace.
    pub tools: Vec<ToolDescription>,
}

/// One tool: name, description and JSON Schema of its parameters.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ToolDescription {
    /// The tool name.
    pub name: String,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the parameters object.
    pub parameters: Option<serde_json::Value>,
}

/// The content of a system message.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SystemContent {
    /// The first line (`You are ChatGPT, ...`).
    pub model_identity: Option<String>,
    /// The reasoning effort.
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Built-in tool namespaces, by name.
    pub tools: Option<BTreeMap<String, ToolNamespaceConfig>>,
    /// The date the conversation takes place (`Current date:`).
    pub conversation_start_date: Option<String>,
    /// The model's knowledge cutoff (`Knowledge cutoff:`).
    pub knowledge_cutoff: Option<String>,
    /// The valid channels.
    pub channel_config: Option<ChannelConfig>,
}

impl Default for SystemContent {
    /// The reference's defaults: ChatGPT identity, cutoff 2024-06, medium effort, three
    /// required channels.
    fn default() -> Self {
        Self {
            model_identity: Some(
                "You are ChatGPT, a large language model trained by OpenAI.".to_string(),
            ),
            reasoning_effort: Some(ReasoningEffort::Medium),
            tools: None,
            conversation_start_date: None,
            knowledge_cutoff: Some("2024-06".to_string()),
            channel_config: Some(ChannelConfig {
                valid_channels: ["analysis", "commentary", "final"]
                    .map(String::from)
                    .to_vec(),
                channel_required: true,
            }),
        }
    }
}

/// A structured-output format offered to the model (the "Response Formats" section).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ResponseFormat {
    /// The format's name (a heading).
    pub name: String,
    /// What the format is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema the response must follow.
    pub schema: serde_json::Value,
}

/// The content of a developer message.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct DeveloperContent {
    /// The developer's instructions (`# Instructions`).
    pub instructions: Option<String>,
    /// Tool namespaces, by name.
    pub tools: Option<BTreeMap<String, ToolNamespaceConfig>>,
    /// Structured-output formats; not part of openai-harmony, so left out of its JSON when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_formats: Option<Vec<ResponseFormat>>,
}

impl DeveloperContent {
    /// Adds (or replaces) the `functions` namespace with `tools`.
    pub fn with_function_tools(mut self, tools: Vec<ToolDescription>) -> Self {
        let namespace = ToolNamespaceConfig {
            name: "functions".to_string(),
            description: None,
            tools,
        };
        self.tools
            .get_or_insert_with(BTreeMap::new)
            .insert(namespace.name.clone(), namespace);
        self
    }
}

/// A conversation: the messages in order.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Conversation {
    /// The messages.
    pub messages: Vec<Message>,
}

impl Conversation {
    /// Reads conversation JSON as the reference's Python package (`Conversation.from_json`)
    /// does, so numbers in tool schemas hold what the reference holds (see [`crate::reference_json`]).
    pub fn from_json(text: &str) -> serde_json::Result<Self> {
        crate::reference_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_fields_stay_absent() {
        let json = r#"{"messages":[{"role":"system","content":[{"type":"system_content"}]}]}"#;
        let conversation: Conversation = serde_json::from_str(json).unwrap();
        let Content::SystemContent(system) = &conversation.messages[0].content[0] else {
            panic!("expected system content");
        };
        assert_eq!(system.model_identity, None);
        assert_eq!(system.channel_config, None);
    }

    #[test]
    fn single_text_content_is_a_string_and_round_trips() {
        let message = Message::from_tool("functions.f", "ok").with_recipient("assistant");
        let json = serde_json::to_string(&message).unwrap();
        assert_eq!(
            json,
            r#"{"role":"tool","name":"functions.f","recipient":"assistant","content":"ok"}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), message);
    }

    #[test]
    fn channel_config_needs_both_fields() {
        let json = r#"{"type":"system_content","channel_config":{"valid_channels":[]}}"#;
        assert!(serde_json::from_str::<Content>(json).is_err());
    }
}
