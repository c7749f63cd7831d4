//! Chat Completions request JSON → chorus (owned values are moved, not copied).

use chorus_core::{
    Content, ContentPart, Conversation, CreatedAt, FunctionCall, Message, Nullable, Role, TextPart,
    ToolCall, ToolDefinition,
};
use serde_json::{Map, Value};

use crate::common::call_ids;
use crate::common::json::{Items, child, chorus_value, describe, item};
use crate::common::pyjson::dumps;
use crate::common::reasoning;
use crate::common::roles;
use chorus_core::Problem;

/// Decodes a request object `{messages, tools?, ...}`; other keys are kept in `extra`.
pub fn request(value: Value) -> Result<Conversation, Problem> {
    let Value::Object(mut map) = value else {
        return Err(Problem::expected(
            "",
            "a request object with `messages`",
            describe(&value),
        ));
    };
    let messages = match map.remove("messages") {
        Some(Value::Array(items)) => messages(items, "/messages")?,
        Some(other) => return Err(Problem::expected("/messages", "an array", describe(&other))),
        None => {
            return Err(Problem::expected(
                "/messages",
                "a field `messages`",
                "nothing",
            ));
        }
    };
    let tools = map.remove("tools").map(tools).transpose()?;
    let mut conversation = Conversation {
        messages,
        tools,
        extra: map,
    };
    call_ids::fill(&mut conversation.messages);
    Ok(conversation)
}

/// Decodes the `tools` array: each definition wrapped or flat, kept as given besides.
pub fn tools(value: Value) -> Result<Vec<ToolDefinition>, Problem> {
    match value {
        Value::Array(tools) => tools
            .into_iter()
            .enumerate()
            .map(|(i, tool)| tool_definition(tool, &item("/tools", i)))
            .collect(),
        other => chorus_value(other, "/tools"),
    }
}

/// One tool definition, wrapped or flat; the object as given is kept, so that formats which print
/// tools as given (chat templates) print it in its shape and key order.
fn tool_definition(tool: Value, pointer: &str) -> Result<ToolDefinition, Problem> {
    let given = tool.as_object().cloned();
    let flat = given.as_ref().is_some_and(is_flat);
    let mut definition: ToolDefinition =
        chorus_value(wrapped_tool(tool), pointer).map_err(|e| {
            // A flat definition's fields are at its top, not under the `function` it was given in;
            // the hint `chorus_value` may add is about tool-call arguments, not definitions.
            let at = match e.pointer.strip_prefix(pointer) {
                Some(rest) if flat => {
                    format!(
                        "{pointer}{}",
                        rest.strip_prefix("/function").unwrap_or(rest)
                    )
                }
                _ => e.pointer.clone(),
            };
            Problem {
                pointer: at,
                hint: None,
                ..e
            }
        })?;
    definition.given = given;
    Ok(definition)
}

/// Whether a tool object has no `function` wrapper but a `name` of its own.
fn is_flat(map: &Map<String, Value>) -> bool {
    !map.contains_key("function") && map.contains_key("name")
}

/// A tool given without the `function` wrapper (`{name, description, parameters}`, as chat
/// templates and the Responses API take it) in the Chat Completions shape.
fn wrapped_tool(tool: Value) -> Value {
    match tool {
        Value::Object(mut map) if is_flat(&map) => {
            let kind = match map.remove("type") {
                Some(Value::String(kind)) => kind,
                _ => "function".to_owned(),
            };
            let mut wrapped = Map::new();
            wrapped.insert("type".into(), Value::String(kind));
            wrapped.insert("function".into(), Value::Object(map));
            Value::Object(wrapped)
        }
        other => other,
    }
}

/// Decodes an array of Chat Completions messages found at `pointer`.
pub fn messages(items: Vec<Value>, pointer: &str) -> Result<Vec<Message>, Problem> {
    let mut at = Items::new(pointer);
    items
        .into_iter()
        .enumerate()
        .map(|(i, m)| message(m, at.at(i)))
        .collect()
}

/// Decodes one message; `reasoning_content` becomes a leading reasoning part.
pub fn message(value: Value, pointer: &str) -> Result<Message, Problem> {
    let Value::Object(map) = value else {
        return Err(Problem::expected(
            pointer,
            "a message object",
            describe(&value),
        ));
    };
    let mut message = Message::new(Role::User, "");
    message.content = Nullable::Absent;
    let mut role_value = None;
    let mut reasoning = None;
    let mut tool_name = None;
    let mut extra = Map::new();
    // One pass over the keys: no hashing per known field.
    for (key, value) in map {
        let string = |value: Value| -> Result<Option<String>, Problem> {
            match value {
                Value::Null => Ok(None),
                Value::String(s) => Ok(Some(s)),
                other => Err(Problem::expected(
                    child(pointer, &key),
                    "a string",
                    describe(&other),
                )),
            }
        };
        match key.as_str() {
            "role" => role_value = Some(value),
            "content" => message.content = content(value, pointer)?,
            "id" => message.id = string(value)?,
            "name" => message.name = string(value)?,
            "tool_call_id" => message.tool_call_id = string(value)?,
            "channel" => message.channel = string(value)?,
            "recipient" => message.recipient = string(value)?,
            "reasoning_content" => reasoning = string(value)?,
            "tool_name" if value.is_string() => tool_name = string(value)?,
            "created_at" if !value.is_null() => {
                message.created_at = Some(chorus_value::<CreatedAt>(
                    value,
                    &child(pointer, "created_at"),
                )?);
            }
            "metadata" if !value.is_null() => {
                message.metadata = Some(chorus_value(value, &child(pointer, "metadata"))?)
            }
            "created_at" | "metadata" => {}
            "tool_calls" => {
                message.tool_calls = match value {
                    Value::Null => Nullable::Null,
                    Value::Array(calls) => {
                        Nullable::Value(tool_calls(calls, &child(pointer, "tool_calls"))?)
                    }
                    other => {
                        return Err(Problem::expected(
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
    // Ollama names the function a tool message answers `tool_name`.
    match (tool_name, &message.name) {
        (Some(tool_name), None) => message.name = Some(tool_name),
        (Some(tool_name), Some(_)) => {
            extra.insert("tool_name".into(), Value::String(tool_name));
        }
        (None, _) => {}
    }
    message.extra = extra;
    if let Some(reasoning) = reasoning {
        reasoning::prepend(&mut message, reasoning);
    }
    Ok(message)
}

fn content(value: Value, pointer: &str) -> Result<Nullable<Content>, Problem> {
    match value {
        Value::Null => Ok(Nullable::Null),
        Value::String(text) => Ok(Nullable::Value(Content::Text(text))),
        Value::Array(parts) => Ok(Nullable::Value(Content::Parts(self::parts(
            parts,
            &child(pointer, "content"),
        )?))),
        other => Err(Problem::expected(
            child(pointer, "content"),
            "a string, an array of parts or null",
            describe(&other),
        )),
    }
}

fn role(value: Option<Value>, pointer: &str) -> Result<Role, Problem> {
    let at = || child(pointer, "role");
    let found = match value {
        Some(Value::String(s)) => s,
        Some(other) => return Err(Problem::expected(at(), "a role string", describe(&other))),
        None => return Err(Problem::expected(at(), "a field `role`", "nothing")),
    };
    if let Some(role) = roles::parse(&found, &roles::ALL) {
        return Ok(role);
    }
    let err = Problem::expected(
        at(),
        "one of system, developer, user, assistant, tool",
        format!("{found:?}"),
    );
    Err(if found == "function" {
        err.with_hint("the legacy `function` role is not supported; use `tool` with `tool_call_id`")
    } else {
        err
    })
}

fn opt_string(
    map: &mut Map<String, Value>,
    key: &str,
    pointer: &str,
) -> Result<Option<String>, Problem> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Problem::expected(
            child(pointer, key),
            "a string",
            describe(&other),
        )),
    }
}

fn parts(items: Vec<Value>, pointer: &str) -> Result<Vec<ContentPart>, Problem> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, part)| self::part(part, &item(pointer, i)))
        .collect()
}

fn part(value: Value, pointer: &str) -> Result<ContentPart, Problem> {
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
    chorus_value(value, pointer)
}

fn tool_calls(items: Vec<Value>, pointer: &str) -> Result<Vec<ToolCall>, Problem> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, call)| tool_call(call, &item(pointer, i)))
        .collect()
}

/// One call: `{id?, type?, function: {name, arguments}}` or flat `{id?, name, arguments}`;
/// `arguments` is JSON text or any JSON value (written as Python's `json.dumps` writes it, which is
/// what chat templates print). A missing id is left empty for [`call_ids::fill`].
fn tool_call(value: Value, pointer: &str) -> Result<ToolCall, Problem> {
    let Value::Object(mut map) = value else {
        return Err(Problem::expected(
            pointer,
            "a tool call object",
            describe(&value),
        ));
    };
    let id = opt_string(&mut map, "id", pointer)?.unwrap_or_default();
    let kind = opt_string(&mut map, "type", pointer)?;
    let (mut function, fn_at) = match map.remove("function") {
        Some(Value::Object(function)) => (function, child(pointer, "function")),
        None if map.contains_key("name") => (std::mem::take(&mut map), pointer.to_owned()),
        found => {
            return Err(Problem::expected(
                child(pointer, "function"),
                "an object {name, arguments}",
                found.as_ref().map_or_else(|| "nothing".into(), describe),
            )
            .with_hint("a call is {\"function\": {\"name\": ..., \"arguments\": ...}} or {\"name\": ..., \"arguments\": ...}"));
        }
    };
    let name = opt_string(&mut function, "name", &fn_at)?.ok_or_else(|| {
        Problem::expected(child(&fn_at, "name"), "a string field `name`", "nothing")
    })?;
    let arguments = match function.remove("arguments") {
        Some(Value::String(s)) => s,
        Some(other) => dumps(&other),
        None => {
            return Err(Problem::expected(
                child(&fn_at, "arguments"),
                "a field `arguments` (JSON text or a JSON value)",
                "nothing",
            )
            .with_hint("a call that takes no arguments has `\"arguments\": \"{}\"`"));
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
    fn object_arguments_are_written_as_python_json_text() {
        let input = json!({"messages": [{"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"b": 1.5e-7, "a": "é"}}}]}]});
        let conversation = request(input).unwrap();
        let call = &conversation.messages[0].calls()[0];
        assert_eq!(call.function.arguments, r#"{"b": 1.5e-07, "a": "é"}"#);
    }

    #[test]
    fn a_call_without_arguments_is_rejected_at_its_pointer() {
        let input = json!({"messages": [{"role": "assistant", "tool_calls": [
            {"function": {"name": "f"}}]}]});
        let err = request(input).unwrap_err();
        assert_eq!(err.pointer, "/messages/0/tool_calls/0/function/arguments");
    }

    #[test]
    fn ollama_and_template_shapes_are_taken() {
        let input = json!({
            "tools": [{"name": "f", "parameters": {"type": "object"}, "description": "d"}],
            "messages": [
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "f", "arguments": {"x": 1}}},
                {"name": "g", "arguments": "{}"}]},
            {"role": "tool", "tool_name": "g", "content": "G"},
            {"role": "tool", "content": "F"}]});
        let conversation = request(input).unwrap();
        let calls = conversation.messages[0].calls();
        assert_eq!(calls[0].id, "call_0");
        assert_eq!(calls[1].id, "call_1");
        assert_eq!(calls[1].function.name, "g");
        assert_eq!(conversation.messages[1].name.as_deref(), Some("g"));
        assert_eq!(
            conversation.messages[1].tool_call_id.as_deref(),
            Some("call_1")
        );
        assert_eq!(
            conversation.messages[2].tool_call_id.as_deref(),
            Some("call_0")
        );
        let tool = &conversation.tools.unwrap()[0];
        assert_eq!(tool.kind.as_deref(), Some("function"));
        assert_eq!(tool.function.description.as_deref(), Some("d"));
    }

    #[test]
    fn tools_keep_the_shape_and_key_order_they_were_given() {
        let tools = json!([
            {"function": {"parameters": {"type": "object"}, "name": "f"}, "type": "function"},
            {"description": null, "name": "g", "type": "function", "x": 1}]);
        let conversation = request(json!({"tools": tools, "messages": []})).unwrap();
        let decoded = conversation.tools.unwrap();
        let given: Vec<Value> = decoded.iter().map(ToolDefinition::as_given).collect();
        assert_eq!(Value::Array(given).to_string(), tools.to_string());
        // Serialized (as the Chat Completions encoder sends it), a definition is wrapped.
        assert_eq!(
            serde_json::to_value(&decoded[1]).unwrap(),
            json!({"type": "function", "function": {"name": "g", "x": 1}})
        );
    }

    #[test]
    fn a_bad_flat_definition_is_refused_at_its_own_field() {
        let err = request(json!({"messages": [], "tools": [{"name": "f", "description": 5}]}))
            .unwrap_err();
        assert_eq!(err.pointer, "/tools/0/description");
        assert_eq!(err.hint, None);
        let err =
            request(json!({"messages": [], "tools": [{"function": {"name": 1}}]})).unwrap_err();
        assert_eq!(err.pointer, "/tools/0/function/name");
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
