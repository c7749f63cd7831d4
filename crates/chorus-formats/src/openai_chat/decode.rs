//! Chat Completions request JSON → chorus (owned values are moved, not copied).

use chorus_core::{
    Content, ContentPart, Conversation, CreatedAt, FunctionCall, Message, ReasoningPart, Role,
    TextPart, ToolCall,
};
use serde_json::{Map, Value};

use crate::chorus::from_value;
use crate::common::json::{Items, child, describe, item};
use crate::error::DecodeError;

/// Decodes a request object `{messages, tools?, ...}`; other keys are kept in `extra`.
pub fn request(value: Value) -> Result<Conversation, DecodeError> {
    let Value::Object(mut map) = value else {
        return Err(DecodeError::new(
            "",
            "a request object with `messages`",
            describe(&value),
        ));
    };
    let messages = match map.remove("messages") {
        Some(Value::Array(items)) => messages(items, "/messages")?,
        Some(other) => return Err(DecodeError::new("/messages", "an array", describe(&other))),
        None => {
            return Err(DecodeError::new(
                "/messages",
                "a field `messages`",
                "nothing",
            ));
        }
    };
    let tools = match map.remove("tools") {
        None => None,
        Some(tools) => Some(from_value(tools, "/tools")?),
    };
    Ok(Conversation {
        messages,
        tools,
        extra: map,
    })
}

/// Decodes an array of Chat Completions messages found at `pointer`.
pub fn messages(items: Vec<Value>, pointer: &str) -> Result<Vec<Message>, DecodeError> {
    let mut at = Items::new(pointer);
    items
        .into_iter()
        .enumerate()
        .map(|(i, m)| message(m, at.at(i)))
        .collect()
}

/// Decodes one message; `reasoning_content` becomes a leading reasoning part.
pub fn message(value: Value, pointer: &str) -> Result<Message, DecodeError> {
    let Value::Object(map) = value else {
        return Err(DecodeError::new(
            pointer,
            "a message object",
            describe(&value),
        ));
    };
    let mut message = Message::new(Role::User, "");
    message.content = None;
    let mut role_value = None;
    let mut reasoning = None;
    let mut extra = Map::new();
    // One pass over the keys: no hashing per known field.
    for (key, value) in map {
        let string = |value: Value| -> Result<Option<String>, DecodeError> {
            match value {
                Value::Null => Ok(None),
                Value::String(s) => Ok(Some(s)),
                other => Err(DecodeError::new(
                    child(pointer, &key),
                    "a string",
                    describe(&other),
                )),
            }
        };
        match key.as_str() {
            "role" => role_value = Some(value),
            "content" => message.content = Some(content(value, pointer)?),
            "id" => message.id = string(value)?,
            "name" => message.name = string(value)?,
            "tool_call_id" => message.tool_call_id = string(value)?,
            "channel" => message.channel = string(value)?,
            "recipient" => message.recipient = string(value)?,
            "reasoning_content" => reasoning = string(value)?,
            "created_at" if !value.is_null() => {
                message.created_at = Some(from_value::<CreatedAt>(
                    value,
                    &child(pointer, "created_at"),
                )?);
            }
            "metadata" if !value.is_null() => {
                message.metadata = Some(from_value(value, &child(pointer, "metadata"))?)
            }
            "created_at" | "metadata" => {}
            "tool_calls" => {
                message.tool_calls = match value {
                    Value::Null => Some(None),
                    Value::Array(calls) => {
                        Some(Some(tool_calls(calls, &child(pointer, "tool_calls"))?))
                    }
                    other => {
                        return Err(DecodeError::new(
                            child(pointer, "tool_calls"),
                            "an array of tool calls",
                            describe(&other),
                        ));
                    }
                }
            }
            _ => {
                extra.insert(key, value);
            }
        }
    }
    message.role = role(role_value, pointer)?;
    message.extra = extra;
    if let Some(reasoning) = reasoning {
        prepend_reasoning(&mut message, reasoning);
    }
    Ok(message)
}

fn content(value: Value, pointer: &str) -> Result<Option<Content>, DecodeError> {
    match value {
        Value::Null => Ok(None),
        Value::String(text) => Ok(Some(Content::Text(text))),
        Value::Array(parts) => Ok(Some(Content::Parts(self::parts(
            parts,
            &child(pointer, "content"),
        )?))),
        other => Err(DecodeError::new(
            child(pointer, "content"),
            "a string, an array of parts or null",
            describe(&other),
        )),
    }
}

fn role(value: Option<Value>, pointer: &str) -> Result<Role, DecodeError> {
    let at = || child(pointer, "role");
    let found = match value {
        Some(Value::String(s)) => s,
        Some(other) => return Err(DecodeError::new(at(), "a role string", describe(&other))),
        None => return Err(DecodeError::new(at(), "a field `role`", "nothing")),
    };
    Ok(match found.as_str() {
        "system" => Role::System,
        "developer" => Role::Developer,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            let err = DecodeError::new(
                at(),
                "one of system, developer, user, assistant, tool",
                format!("{other:?}"),
            );
            return Err(if other == "function" {
                err.hint(
                    "the legacy `function` role is not supported; use `tool` with `tool_call_id`",
                )
            } else {
                err
            });
        }
    })
}

fn opt_string(
    map: &mut Map<String, Value>,
    key: &str,
    pointer: &str,
) -> Result<Option<String>, DecodeError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(DecodeError::new(
            child(pointer, key),
            "a string",
            describe(&other),
        )),
    }
}

/// Puts reasoning text in front of the content as a reasoning part.
pub fn prepend_reasoning(message: &mut Message, reasoning: String) {
    let part = ContentPart::Reasoning(ReasoningPart {
        text: reasoning,
        ..ReasoningPart::default()
    });
    let mut parts = match message.content.take().flatten() {
        None => Vec::new(),
        Some(Content::Text(text)) => vec![ContentPart::text(text)],
        Some(Content::Parts(parts)) => parts,
    };
    parts.insert(0, part);
    message.content = Some(Some(Content::Parts(parts)));
}

fn parts(items: Vec<Value>, pointer: &str) -> Result<Vec<ContentPart>, DecodeError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, part)| self::part(part, &item(pointer, i)))
        .collect()
}

fn part(value: Value, pointer: &str) -> Result<ContentPart, DecodeError> {
    if let Value::Object(map) = &value
        && map.len() == 2
        && map.get("type").and_then(Value::as_str) == Some("text")
        && let Some(Value::String(_)) = map.get("text")
    {
        let Value::Object(mut map) = value else {
            unreachable!()
        };
        let Some(Value::String(text)) = map.remove("text") else {
            unreachable!()
        };
        return Ok(ContentPart::Text(TextPart {
            text,
            ..TextPart::default()
        }));
    }
    from_value(value, pointer)
}

fn tool_calls(items: Vec<Value>, pointer: &str) -> Result<Vec<ToolCall>, DecodeError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, call)| tool_call(call, &item(pointer, i)))
        .collect()
}

fn tool_call(value: Value, pointer: &str) -> Result<ToolCall, DecodeError> {
    let Value::Object(mut map) = value else {
        return Err(DecodeError::new(
            pointer,
            "a tool call object",
            describe(&value),
        ));
    };
    let id = opt_string(&mut map, "id", pointer)?
        .ok_or_else(|| DecodeError::new(child(pointer, "id"), "a string field `id`", "nothing"))?;
    let kind = opt_string(&mut map, "type", pointer)?;
    let fn_at = child(pointer, "function");
    let Some(Value::Object(mut function)) = map.remove("function") else {
        return Err(DecodeError::new(
            fn_at,
            "an object {name, arguments}",
            "something else",
        ));
    };
    let name = opt_string(&mut function, "name", &fn_at)?.ok_or_else(|| {
        DecodeError::new(child(&fn_at, "name"), "a string field `name`", "nothing")
    })?;
    let arguments = match function.remove("arguments") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(DecodeError::new(child(&fn_at, "arguments"), "a JSON string", describe(&other))
                .hint("`arguments` must be the JSON text of the arguments (JSON.stringify it), not an object"));
        }
        None => {
            return Err(DecodeError::new(
                child(&fn_at, "arguments"),
                "a string field `arguments`",
                "nothing",
            ));
        }
    };
    Ok(ToolCall {
        id,
        kind,
        function: FunctionCall {
            name,
            arguments,
            extra: function,
        },
        extra: map,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_arguments_are_rejected_with_a_hint() {
        let input = json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}]});
        let err = request(input).unwrap_err();
        assert_eq!(err.pointer, "/messages/0/tool_calls/0/function/arguments");
        assert!(err.hint.unwrap().contains("JSON"));
    }

    #[test]
    fn reasoning_content_becomes_a_leading_part() {
        let m = message(
            json!({"role": "assistant", "content": "4", "reasoning_content": "2+2"}),
            "",
        )
        .unwrap();
        let parts = m.parts();
        assert!(matches!(&parts[0], ContentPart::Reasoning(r) if r.text == "2+2"));
        assert_eq!(parts[1].as_text(), Some("4"));
    }
}
