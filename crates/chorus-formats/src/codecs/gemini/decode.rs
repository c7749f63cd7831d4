//! Gemini `generateContent` request or response JSON → chorus (snake_case or camelCase keys).

use chorus_core::{
    Content, ContentPart, Conversation, FunctionCall, FunctionDefinition, Message, Metadata,
    Nullable, Role, ToolCall, ToolDefinition,
};
use serde_json::{Map, Value};

use super::decode_parts::media_or_text;
use super::spelling::{self, get, rest};
use crate::Format;
use crate::common::call_ids;
use crate::common::extras::{SPELLING, namespace, stash};
use crate::common::json::{array, child, item, object, opt_string, string};
use crate::common::params;
use crate::common::usage::{self, Keys};
use chorus_core::Problem;

const ME: Format = Format::Gemini;

/// Calls waiting for their function responses, oldest first.
#[derive(Default)]
struct Pending {
    calls: Vec<(String, String)>,
    seen: usize,
}

/// Decodes a request `{contents, system_instruction?, tools?, ...}` or a response with `candidates`.
pub fn conversation(value: &Value) -> Result<Conversation, Problem> {
    let map = object(value, "")?;
    if map.contains_key("candidates") {
        return response(map);
    }
    let mut messages = Vec::new();
    if let Some((system, key)) = get(map, "system_instruction") {
        let at = child("", &key);
        let parts_value = object(system, &at)?
            .get("parts")
            .ok_or_else(|| Problem::expected(child(&at, "parts"), "a `parts` array", "nothing"))?;
        let mut m = Message::new(Role::System, "");
        let mut parts = Vec::new();
        for (i, p) in array(parts_value, &child(&at, "parts"))?.iter().enumerate() {
            parts.push(media_or_text(p, &item(&child(&at, "parts"), i))?);
        }
        m.content = Nullable::Value(match parts.as_slice() {
            [ContentPart::Text(t)] if t.extra.is_empty() => Content::Text(t.text.clone()),
            _ => Content::Parts(parts),
        });
        messages.push(m);
    }
    let contents = map
        .get("contents")
        .ok_or_else(|| Problem::expected("/contents", "a `contents` array", "nothing"))?;
    let mut pending = Pending::default();
    for (i, c) in array(contents, "/contents")?.iter().enumerate() {
        content(c, &item("/contents", i), &mut pending, &mut messages)?;
    }
    let mut extra = Map::new();
    let mut unknown = rest(map, &["system_instruction", "contents", "tools"]);
    let mut tools = None;
    if let Some(list) = map.get("tools") {
        let mut defs = Vec::new();
        let mut others = Vec::new();
        for (i, t) in array(list, "/tools")?.iter().enumerate() {
            let at = item("/tools", i);
            match get(object(t, &at)?, "function_declarations") {
                Some((decls, key)) => {
                    for (j, d) in array(decls, &child(&at, &key))?.iter().enumerate() {
                        defs.push(declaration(d, &item(&child(&at, &key), j))?);
                    }
                }
                None => others.push(t.clone()),
            }
        }
        tools = Some(defs);
        if !others.is_empty() {
            unknown.insert("tools".into(), Value::Array(others));
        }
    }
    extra.extend(params::read(ME, &mut unknown));
    if spelling::is_camel(value) {
        unknown.insert(SPELLING.into(), Value::String(spelling::CAMEL.into()));
    }
    stash(&mut extra, ME, unknown);
    Ok(Conversation {
        messages,
        tools,
        extra,
    })
}

fn response(map: &Map<String, Value>) -> Result<Conversation, Problem> {
    let mut messages = Vec::new();
    let candidates = array(&map["candidates"], "/candidates")?;
    for (i, candidate) in candidates.iter().enumerate() {
        let at = item("/candidates", i);
        let cand = object(candidate, &at)?;
        let start = messages.len();
        if let Some(c) = cand.get("content") {
            content(
                c,
                &child(&at, "content"),
                &mut Pending::default(),
                &mut messages,
            )?;
        }
        let Some(m) = messages.get_mut(start) else {
            continue;
        };
        m.id = get(map, "response_id")
            .and_then(|(v, _)| v.as_str())
            .map(str::to_owned);
        let mut metadata = Metadata {
            model_version: get(map, "model_version")
                .and_then(|(v, _)| v.as_str())
                .map(str::to_owned),
            ..Metadata::default()
        };
        if let Some((usage, _)) = get(map, "usage_metadata") {
            let keys = Keys {
                prompt: "promptTokenCount",
                completion: "candidatesTokenCount",
                total: Some("totalTokenCount"),
            };
            let usage = usage.as_object().cloned().unwrap_or_default();
            metadata.token_usage = Some(usage::read(&usage, &keys));
        }
        stash(&mut metadata.extra, ME, rest(cand, &["content"]));
        m.metadata = Some(metadata);
    }
    // Fields of the response as a whole describe the reply, not a request: they stay with it.
    let response_fields = rest(
        map,
        &[
            "candidates",
            "response_id",
            "model_version",
            "usage_metadata",
        ],
    );
    let mut conversation = Conversation {
        messages,
        ..Conversation::default()
    };
    match conversation.messages.first_mut() {
        Some(first) => {
            let metadata = first.metadata.get_or_insert_with(Metadata::default);
            let mut own = match metadata.extra.shift_remove(&namespace(ME)) {
                Some(Value::Object(own)) => own,
                _ => Map::new(),
            };
            own.extend(response_fields);
            stash(&mut metadata.extra, ME, own);
        }
        None => stash(&mut conversation.extra, ME, response_fields),
    }
    Ok(conversation)
}

/// One `contents` entry; function responses become tool messages in place.
fn content(
    value: &Value,
    at: &str,
    pending: &mut Pending,
    out: &mut Vec<Message>,
) -> Result<(), Problem> {
    let map = object(value, at)?;
    let role = match opt_string(map, "role", at)? {
        Some("model") => Role::Assistant,
        Some("user") | Some("function") | None => Role::User,
        Some(other) => {
            return Err(Problem::expected(
                child(at, "role"),
                "user or model",
                format!("{other:?}"),
            )
            .with_hint("Gemini calls the assistant `model`"));
        }
    };
    let parts_at = child(at, "parts");
    let parts = array(map.get("parts").unwrap_or(&Value::Null), &parts_at)?;
    let mut current: Vec<ContentPart> = Vec::new();
    let mut calls = Vec::new();
    let mut open = false;
    for (i, p) in parts.iter().enumerate() {
        let p_at = item(&parts_at, i);
        let pm = object(p, &p_at)?;
        if let Some((call, key)) = get(pm, "function_call") {
            calls.push(function_call(
                call,
                &child(&p_at, &key),
                rest(pm, &["function_call"]),
                pending,
            )?);
            open = true;
        } else if let Some((resp, key)) = get(pm, "function_response") {
            if open && role != Role::Assistant {
                out.push(Message::with_parts(role, std::mem::take(&mut current)));
                open = false;
            }
            out.push(function_response(
                resp,
                &child(&p_at, &key),
                rest(pm, &["function_response"]),
                pending,
            )?);
        } else {
            current.push(media_or_text(p, &p_at)?);
            open = true;
        }
    }
    if open || parts.is_empty() {
        let mut m = Message::with_parts(role, current);
        if !calls.is_empty() {
            if m.parts().is_empty() {
                m.content = Nullable::Null;
            }
            m.tool_calls = Nullable::Value(calls);
        }
        stash(&mut m.extra, ME, rest(map, &["role", "parts"]));
        out.push(m);
    }
    Ok(())
}

fn function_call(
    value: &Value,
    at: &str,
    part_rest: Map<String, Value>,
    pending: &mut Pending,
) -> Result<ToolCall, Problem> {
    let map = object(value, at)?;
    let name = string(map, "name", at)?.to_owned();
    let args = map
        .get("args")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let id = match opt_string(map, "id", at)? {
        Some(id) => id.to_owned(),
        None => call_ids::numbered(pending.seen),
    };
    pending.seen += 1;
    pending.calls.push((id.clone(), name.clone()));
    let mut call = ToolCall {
        id,
        kind: Some("function".into()),
        function: FunctionCall {
            name,
            arguments: args.to_string(),
            extra: Map::new(),
        },
        extra: Map::new(),
    };
    stash(&mut call.extra, ME, part_rest);
    stash(
        &mut call.function.extra,
        ME,
        rest(map, &["name", "args", "id"]),
    );
    Ok(call)
}

fn function_response(
    value: &Value,
    at: &str,
    part_rest: Map<String, Value>,
    pending: &mut Pending,
) -> Result<Message, Problem> {
    let map = object(value, at)?;
    let name = string(map, "name", at)?.to_owned();
    let id = match opt_string(map, "id", at)? {
        Some(id) => {
            pending.calls.retain(|(c, _)| c != id);
            id.to_owned()
        }
        None => match pending.calls.iter().position(|(_, n)| *n == name) {
            Some(k) => pending.calls.remove(k).0,
            None => {
                return Err(Problem::expected(
                    at,
                    "a function response after its function call",
                    format!("a response for `{name}` with no open call"),
                )
                .with_hint("give both the call and the response the same `id`"));
            }
        },
    };
    let response = map.get("response").cloned().unwrap_or(Value::Null);
    let mut m = Message::new(Role::Tool, result_text(&response));
    m.name = Some(name);
    m.tool_call_id = Some(id);
    let mut unknown = rest(map, &["name", "id", "response"]);
    unknown.extend(part_rest);
    stash(&mut m.extra, ME, unknown);
    Ok(m)
}

/// The tool message text of a response: an `error` key holding exactly `error_type` and `message`
/// is a seed-000 error result (as the encoder writes it); anything else is the response's JSON.
fn result_text(response: &Value) -> String {
    let error = response
        .as_object()
        .filter(|r| r.len() == 1)
        .and_then(|r| r.get("error"))
        .and_then(Value::as_object)
        .filter(|e| e.len() == 2);
    let field = |name: &str| error.and_then(|e| e.get(name)).and_then(Value::as_str);
    match (field("error_type"), field("message")) {
        (Some(error_type), Some(message)) => chorus_core::ToolOutcome::Error {
            error_type: error_type.to_owned(),
            message: message.to_owned(),
        }
        .to_text(),
        _ => response.to_string(),
    }
}

fn declaration(value: &Value, at: &str) -> Result<ToolDefinition, Problem> {
    let map = object(value, at)?;
    let mut function = FunctionDefinition {
        name: string(map, "name", at)?.to_owned(),
        description: opt_string(map, "description", at)?.map(str::to_owned),
        parameters: map.get("parameters").cloned(),
        strict: None,
        extra: Map::new(),
    };
    stash(
        &mut function.extra,
        ME,
        rest(map, &["name", "description", "parameters"]),
    );
    Ok(ToolDefinition {
        kind: Some("function".into()),
        function,
        extra: Map::new(),
        given: None,
    })
}
