//! LangChain's `count_tokens_approximately` rules (langchain-core 1.8), applied to chorus messages.

use chorus_core::{Content, ContentPart, Message, Role};
use serde_json::{Map, Value, json};

use super::pyrepr::repr_len;

/// The parameters of LangChain's approximate counter, with its defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApproxOptions {
    /// Characters per token: 4.0.
    pub chars_per_token: f64,
    /// Tokens added per message: 3.0.
    pub extra_tokens_per_message: f64,
    /// Whether `name` counts: true.
    pub count_name: bool,
    /// Fixed cost of an image block: 85.
    pub tokens_per_image: usize,
}

impl Default for ApproxOptions {
    fn default() -> Self {
        ApproxOptions {
            chars_per_token: 4.0,
            extra_tokens_per_message: 3.0,
            count_name: true,
            tokens_per_image: 85,
        }
    }
}

/// The role name LangChain gives a message when it converts it to OpenAI form.
fn openai_role(role: Role) -> &'static str {
    role.as_str()
}

/// Tokens of one message before LangChain's final rounding of the sum.
pub(crate) fn approximate_message(message: &Message, options: &ApproxOptions) -> f64 {
    let mut chars = 0usize;
    let mut image_tokens = 0usize;
    let is_list = matches!(message.content(), Some(Content::Parts(_)));
    match message.content() {
        None => {}
        Some(Content::Text(text)) => chars += text.chars().count(),
        Some(Content::Parts(parts)) => {
            for part in parts {
                match part {
                    ContentPart::Image(_) => image_tokens += options.tokens_per_image,
                    ContentPart::Text(text) => chars += text.text.chars().count(),
                    other => {
                        let value = serde_json::to_value(other).unwrap_or(Value::Null);
                        chars += repr_len(&value);
                    }
                }
            }
        }
    }
    if message.role == Role::Assistant && !is_list {
        let calls = langchain_tool_calls(message);
        if !calls.is_empty() {
            chars += repr_len(&Value::Array(calls));
        }
    }
    if message.role == Role::Tool {
        chars += message
            .tool_call_id
            .as_deref()
            .unwrap_or_default()
            .chars()
            .count();
    }
    chars += openai_role(message.role).len();
    if options.count_name {
        chars += message.name.as_deref().map_or(0, |n| n.chars().count());
    }
    (chars as f64 / options.chars_per_token).ceil()
        + options.extra_tokens_per_message
        + image_tokens as f64
}

/// The total of LangChain's `count_tokens_approximately` for `messages`.
pub fn count_tokens_approximately(messages: &[Message], options: &ApproxOptions) -> usize {
    messages
        .iter()
        .map(|m| approximate_message(m, options))
        .sum::<f64>()
        .ceil() as usize
}

/// Tool calls as LangChain holds them (`{'name', 'args', 'id', 'type': 'tool_call'}`); calls
/// whose arguments are not a JSON object are invalid calls there and are left out.
fn langchain_tool_calls(message: &Message) -> Vec<Value> {
    message
        .calls()
        .iter()
        .filter_map(|call| {
            let args = call.parsed_arguments().ok()?;
            args.is_object().then(|| {
                let mut map = Map::new();
                map.insert("name".into(), json!(call.function.name));
                map.insert("args".into(), args);
                map.insert("id".into(), json!(call.id));
                map.insert("type".into(), json!("tool_call"));
                Value::Object(map)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::{Nullable, ToolCall};

    #[test]
    fn follows_langchain_rules() {
        // "hello world" (11) + "user" (4) = 15 chars -> ceil(15/4) = 4, + 3 = 7.
        let m = Message::new(Role::User, "hello world");
        assert_eq!(
            count_tokens_approximately(&[m], &ApproxOptions::default()),
            7
        );
        // A name counts: + "bob" -> 18 chars -> 5 + 3 = 8.
        let mut named = Message::new(Role::User, "hello world");
        named.name = Some("bob".into());
        assert_eq!(approximate_message(&named, &ApproxOptions::default()), 8.0);
    }

    #[test]
    fn tool_calls_count_as_their_python_repr() {
        let mut m = Message::new(Role::Assistant, "");
        m.tool_calls = Nullable::Value(vec![ToolCall::function("c1", "f", &json!({"x": 1}))]);
        // [{'name': 'f', 'args': {'x': 1}, 'id': 'c1', 'type': 'tool_call'}] + "assistant"
        let repr = "[{'name': 'f', 'args': {'x': 1}, 'id': 'c1', 'type': 'tool_call'}]";
        let chars = repr.len() + "assistant".len();
        let expected = (chars as f64 / 4.0).ceil() + 3.0;
        assert_eq!(approximate_message(&m, &ApproxOptions::default()), expected);
    }
}
