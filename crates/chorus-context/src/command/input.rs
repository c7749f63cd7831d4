//! Reading conversations for the commands: chorus JSON and OpenAI Chat messages.

use chorus_core::{Conversation, Message};
use serde_json::Value;

use super::CommandError;

/// Input formats `--from` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// chorus JSON: a conversation object or an array of messages.
    Chorus,
    /// OpenAI Chat Completions: a request body (`messages`, `tools`) or an array of messages.
    OpenAiChat,
}

impl InputFormat {
    /// Reads a format id: `chorus`, or `openai-chat` (also `openai`, `openai_chat`).
    pub fn parse(id: &str) -> Result<Self, String> {
        match id {
            "chorus" => Ok(InputFormat::Chorus),
            "openai-chat" | "openai_chat" | "openai" => Ok(InputFormat::OpenAiChat),
            other => Err(format!(
                "unknown format `{other}`; expected chorus or openai-chat"
            )),
        }
    }
}

/// The parsed conversation and whether the input was a bare array of messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The conversation.
    pub conversation: Conversation,
    /// The input's top-level JSON, to write the result back in the same shape.
    pub original: Value,
}

/// Parses `text` in `format`; errors name the JSON pointer of what is wrong.
pub fn read_conversation(text: &str, format: InputFormat) -> Result<Input, CommandError> {
    let original: Value = serde_json::from_str(text).map_err(|e| {
        CommandError::Input(format!(
            "line {} column {}: expected JSON; {e}",
            e.line(),
            e.column()
        ))
    })?;
    let (messages_value, prefix) = match &original {
        Value::Array(_) => (original.clone(), ""),
        Value::Object(map) if map.contains_key("messages") => {
            (map["messages"].clone(), "/messages")
        }
        _ => {
            return Err(CommandError::Input(format!(
                "/: expected an array of messages or an object with `messages` ({})",
                match format {
                    InputFormat::Chorus => "a chorus conversation",
                    InputFormat::OpenAiChat => "an OpenAI Chat request body",
                }
            )));
        }
    };
    let messages: Vec<Message> = serde_path_to_error::deserialize(messages_value).map_err(|e| {
        CommandError::Input(format!("{prefix}{}: {}", pointer(e.path()), e.inner()))
    })?;
    let tools = match original.get("tools") {
        Some(tools) => Some(
            serde_path_to_error::deserialize(tools.clone()).map_err(|e| {
                CommandError::Input(format!("/tools{}: {}", pointer(e.path()), e.inner()))
            })?,
        ),
        None => None,
    };
    Ok(Input {
        conversation: Conversation {
            messages,
            tools,
            extra: Default::default(),
        },
        original,
    })
}

/// A JSON pointer for a serde path.
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    path.iter()
        .map(|segment| match segment {
            Segment::Seq { index } => format!("/{index}"),
            Segment::Map { key } => format!("/{}", key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => format!("/{variant}"),
            Segment::Unknown => "/?".to_owned(),
        })
        .collect()
}

/// `messages` written back in the shape of `original` (an array, or the object with
/// `messages` replaced).
pub fn write_back(original: &Value, messages: &[Message]) -> Value {
    let messages = serde_json::to_value(messages).unwrap_or(Value::Null);
    match original {
        Value::Object(map) => {
            let mut map = map.clone();
            map.insert("messages".into(), messages);
            Value::Object(map)
        }
        _ => messages,
    }
}
