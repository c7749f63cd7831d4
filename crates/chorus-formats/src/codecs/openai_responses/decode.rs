//! OpenAI Responses API input or output items → chorus.

use chorus_core::{
    Content, ContentPart, Conversation, FunctionCall, FunctionDefinition, Message, Metadata,
    Nullable, ReasoningPart, Role, ToolCall, ToolDefinition,
};
use serde_json::{Map, Value};

use super::parts;
use super::{INSTRUCTIONS, ITEM};
use crate::Format;
use crate::common::extras::stash;
use crate::common::json::{array, child, describe, item, object, opt_string, string, unknown_keys};
use crate::common::origin::marked;
use crate::common::params;
use crate::common::roles;
use crate::common::usage::{self, Keys};
use chorus_core::Problem;

const ME: Format = Format::OpenAiResponses;

/// Decodes a request `{input, instructions?, tools?, ...}`, a response `{object: "response",
/// output}`, or a bare list of input items (what the OpenAI Agents SDK's `to_input_list()`
/// returns).
pub fn conversation(value: &Value) -> Result<Conversation, Problem> {
    if value.is_array() {
        return Ok(Conversation {
            messages: items(value, "")?,
            ..Conversation::default()
        });
    }
    let map = object(value, "")?;
    let mut conversation = Conversation::default();
    if map.get("object").and_then(Value::as_str) == Some("response")
        || (map.contains_key("output") && !map.contains_key("input"))
    {
        conversation.messages = items(map.get("output").unwrap_or(&Value::Null), "/output")?;
        response_metadata(map, &mut conversation);
        return Ok(conversation);
    }
    if let Some(instructions) = opt_string(map, "instructions", "")? {
        let mut m = Message::new(Role::System, instructions);
        stash(
            &mut m.extra,
            ME,
            Map::from_iter([(INSTRUCTIONS.to_owned(), Value::Bool(true))]),
        );
        conversation.messages.push(m);
    }
    match map.get("input") {
        Some(Value::String(text)) => conversation
            .messages
            .push(Message::new(Role::User, text.clone())),
        Some(other) => conversation.messages.extend(items(other, "/input")?),
        None => {
            return Err(Problem::expected(
                "/input",
                "an `input` string or array of items",
                "nothing",
            ));
        }
    }
    let mut unknown = unknown_keys(map, &["input", "instructions", "tools"]);
    if let Some(tools) = map.get("tools") {
        let mut defs = Vec::new();
        let mut others = Vec::new();
        for (i, t) in array(tools, "/tools")?.iter().enumerate() {
            let at = item("/tools", i);
            let tm = object(t, &at)?;
            if tm.get("type").and_then(Value::as_str) == Some("function") {
                // Strict unless it says not (the Responses default); a non-strict tool is a
                // chorus tool without `strict`, as in Chat Completions.
                let strict = match tm.get("strict") {
                    None => Some(true),
                    Some(Value::Bool(true)) => Some(true),
                    Some(_) => None,
                };
                let mut function = FunctionDefinition {
                    name: string(tm, "name", &at)?.to_owned(),
                    description: opt_string(tm, "description", &at)?.map(str::to_owned),
                    parameters: tm.get("parameters").filter(|p| !p.is_null()).cloned(),
                    strict,
                    extra: Map::new(),
                };
                stash(
                    &mut function.extra,
                    ME,
                    unknown_keys(tm, &["type", "name", "description", "parameters", "strict"]),
                );
                defs.push(ToolDefinition {
                    kind: Some("function".into()),
                    function,
                    extra: Map::new(),
                    given: None,
                });
            } else {
                others.push(t.clone());
            }
        }
        conversation.tools = Some(defs);
        if !others.is_empty() {
            unknown.insert("tools".into(), Value::Array(others));
        }
    }
    conversation.extra = params::read(ME, &mut unknown);
    stash(&mut conversation.extra, ME, unknown);
    Ok(conversation)
}

fn response_metadata(map: &Map<String, Value>, conversation: &mut Conversation) {
    // Fields of the response as a whole (id, status, the echoed request settings) describe the
    // reply, not a request: they stay with its last assistant message.
    let response_fields = unknown_keys(map, &["output", "model", "usage"]);
    if let Some(m) = conversation
        .messages
        .iter_mut()
        .rev()
        .find(|m| m.role == Role::Assistant)
    {
        let metadata = m.metadata.get_or_insert_with(Metadata::default);
        stash(&mut metadata.extra, ME, response_fields);
        metadata.model_version = map.get("model").and_then(Value::as_str).map(str::to_owned);
        if let Some(usage) = map.get("usage").and_then(Value::as_object) {
            let keys = Keys {
                prompt: "input_tokens",
                completion: "output_tokens",
                total: Some("total_tokens"),
            };
            metadata.token_usage = Some(usage::read(usage, &keys));
        }
    } else {
        stash(&mut conversation.extra, ME, response_fields);
    }
}

/// Which part of an assistant turn an item fills, in the order the turn is written.
pub(super) fn stage(kind: &str) -> Option<u8> {
    match kind {
        "reasoning" => Some(0),
        "message" => Some(1),
        "function_call" => Some(2),
        _ => None,
    }
}

/// Decodes input or output items; an assistant turn's reasoning, message and calls are one message.
pub fn items(value: &Value, pointer: &str) -> Result<Vec<Message>, Problem> {
    let mut out: Vec<Message> = Vec::new();
    let mut turn_stage: Option<u8> = None;
    for (i, it) in array(value, pointer)?.iter().enumerate() {
        let at = item(pointer, i);
        let map = object(it, &at)?;
        let kind = match map.get("type") {
            Some(Value::String(t)) => t.as_str(),
            None if map.contains_key("role") => "message",
            Some(other) => {
                return Err(Problem::expected(
                    child(&at, "type"),
                    "an item type",
                    describe(other),
                ));
            }
            None => {
                return Err(Problem::expected(
                    child(&at, "type"),
                    "an item type",
                    "nothing",
                ));
            }
        };
        let role = if kind == "message" {
            Some(string(map, "role", &at)?)
        } else {
            None
        };
        let assistant_side = stage(kind).is_some() && role.is_none_or(|r| r == "assistant");
        let continues = assistant_side
            && turn_stage.is_some_and(|s| stage(kind).is_some_and(|k| k > s || (k == s && k != 1)));
        match kind {
            "message" => {
                let role = role.unwrap_or_default();
                let (id, content) = message_content(map, &at)?;
                if continues {
                    let m = out.last_mut().expect("a continued turn has a message");
                    let mut parts = m.parts();
                    if let Some(Content::Parts(more)) = &content {
                        parts.extend(more.iter().cloned());
                    } else if let Some(Content::Text(t)) = &content {
                        parts.push(ContentPart::text(t.clone()));
                    }
                    m.content = Nullable::Value(Content::Parts(parts));
                    m.id = id;
                } else {
                    let mut m = Message::new(parse_role(role, &at)?, "");
                    // A message without `content` reads as null content.
                    m.content = Nullable::from_option(content);
                    m.id = id;
                    out.push(m);
                }
                // A completed status is what the encoder writes for a message with an id.
                let known: &[&str] = if map.get("status").is_some_and(|s| s == "completed") {
                    &["type", "role", "content", "id", "status"]
                } else {
                    &["type", "role", "content", "id"]
                };
                stash(
                    &mut out.last_mut().expect("pushed").extra,
                    ME,
                    unknown_keys(map, known),
                );
            }
            "reasoning" => {
                let part = reasoning(map);
                if continues {
                    let m = out.last_mut().expect("a continued turn has a message");
                    let mut parts = m.parts();
                    parts.push(part);
                    m.content = Nullable::Value(Content::Parts(parts));
                } else {
                    out.push(Message::with_parts(Role::Assistant, vec![part]));
                }
            }
            "function_call" => {
                let mut call = ToolCall {
                    id: string(map, "call_id", &at)?.to_owned(),
                    kind: Some("function".into()),
                    function: FunctionCall {
                        name: string(map, "name", &at)?.to_owned(),
                        arguments: string(map, "arguments", &at)?.to_owned(),
                        extra: Map::new(),
                    },
                    extra: Map::new(),
                };
                stash(
                    &mut call.extra,
                    ME,
                    unknown_keys(map, &["type", "call_id", "name", "arguments"]),
                );
                if !continues {
                    let mut m = Message::new(Role::Assistant, "");
                    m.content = Nullable::Null;
                    out.push(m);
                }
                let m = out.last_mut().expect("pushed");
                if let Nullable::Value(calls) = &mut m.tool_calls {
                    calls.push(call);
                } else {
                    m.tool_calls = Nullable::Value(vec![call]);
                }
            }
            "function_call_output" => {
                let mut m = Message::new(Role::Tool, "");
                m.tool_call_id = Some(string(map, "call_id", &at)?.to_owned());
                m.content = Nullable::Value(match map.get("output") {
                    Some(Value::String(s)) => Content::Text(s.clone()),
                    Some(other) => Content::Parts(parts::decode(other, &child(&at, "output"))?),
                    None => {
                        return Err(Problem::expected(
                            child(&at, "output"),
                            "the tool output",
                            "nothing",
                        ));
                    }
                });
                stash(
                    &mut m.extra,
                    ME,
                    unknown_keys(map, &["type", "call_id", "output"]),
                );
                out.push(m);
            }
            _ => {
                let other = ContentPart::Other(marked(map, ME));
                let mut m = Message::with_parts(Role::Assistant, vec![other]);
                stash(
                    &mut m.extra,
                    ME,
                    Map::from_iter([(ITEM.to_owned(), Value::Bool(true))]),
                );
                out.push(m);
            }
        }
        turn_stage = if assistant_side { stage(kind) } else { None };
    }
    Ok(out)
}

fn parse_role(role: &str, at: &str) -> Result<Role, Problem> {
    let allowed = [Role::System, Role::Developer, Role::User, Role::Assistant];
    roles::parse(role, &allowed).ok_or_else(|| {
        Problem::expected(
            child(at, "role"),
            "system, developer, user or assistant",
            format!("{role:?}"),
        )
    })
}

fn message_content(
    map: &Map<String, Value>,
    at: &str,
) -> Result<(Option<String>, Option<Content>), Problem> {
    let id = opt_string(map, "id", at)?.map(str::to_owned);
    let content = match map.get("content") {
        Some(Value::String(s)) => Some(Content::Text(s.clone())),
        Some(other) => Some(Content::Parts(parts::decode(other, &child(at, "content"))?)),
        None => None,
    };
    Ok((id, content))
}

fn reasoning(map: &Map<String, Value>) -> ContentPart {
    let summary = map
        .get("summary")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut part = ReasoningPart::default();
    let mut rest = unknown_keys(map, &["type", "summary", "encrypted_content"]);
    match summary.as_slice() {
        [] => {}
        [one]
            if one.get("type").and_then(Value::as_str) == Some("summary_text")
                && one.as_object().is_some_and(|o| o.len() == 2) =>
        {
            part.text = one["text"].as_str().unwrap_or_default().to_owned();
        }
        many => {
            part.text = many
                .iter()
                .filter_map(|s| s.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n\n");
            rest.insert("summary".into(), Value::Array(many.to_vec()));
        }
    }
    part.signature = map
        .get("encrypted_content")
        .and_then(Value::as_str)
        .map(str::to_owned);
    stash(&mut part.extra, ME, rest);
    ContentPart::Reasoning(part)
}
