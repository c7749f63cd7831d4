//! chorus → Gemini `generateContent` request JSON (snake_case keys, as in Google's REST examples,
//! or camelCase when the request was given so).

use chorus_core::{Content, ContentPart, Conversation, Message, Role};
use serde_json::{Map, Value, json};

use super::parts::part;
use super::spelling;
use crate::Format;
use crate::common::arguments;
use crate::common::call_ids;
use crate::common::extras::{SPELLING, drop_all, for_target, merge_into, namespace};
use crate::common::fields::{Field, report_unsupported};
use crate::common::json::{child, item};
use crate::common::outgoing::{Pairing, unnamed};
use crate::common::params;
use crate::common::system::{self, Slot};
use crate::loss::{Losses, Policy};
use crate::options::EncodeOptions;

const ME: Format = Format::Gemini;

/// `system_instruction`, as loss reports name it.
const SYSTEM: Slot = Slot {
    developer: "developer message sent as system instruction",
    moved: "system message moved into system_instruction",
    merged: "system messages merged into one system_instruction",
    no_content: "missing or null content is written as no parts",
};

/// Encodes a conversation as a `generateContent` request.
pub fn request(conversation: &Conversation, options: &EncodeOptions, losses: &mut Losses) -> Value {
    let messages = unnamed(conversation, Pairing::WithoutOrphans, options.names, losses);
    let mut system_parts = Vec::new();
    let mut contents: Vec<Map<String, Value>> = Vec::new();
    let mut call_names: Vec<(String, String)> = Vec::new();
    let mut calls_seen = 0;
    let mut last_was_result = false;
    let mut seen_system = false;
    for (i, m) in &messages {
        let at = item("/messages", *i);
        fields(m, &at, losses);
        match m.role {
            Role::System | Role::Developer => {
                system::report(m, &at, !contents.is_empty(), seen_system, &SYSTEM, losses);
                seen_system = true;
                let own = parts(m, &at, losses);
                if own.is_empty() {
                    losses.push(
                        &at,
                        Policy::Dropped,
                        "a system message without parts leaves nothing in system_instruction",
                    );
                }
                system_parts.extend(own);
                drop_all(&m.extra, &at, "a Gemini system instruction", losses);
                last_was_result = false;
            }
            Role::Tool => {
                let (part, media) = function_response(m, &at, &call_names, losses);
                match contents.last_mut() {
                    Some(last) if last_was_result => push_parts(last, vec![part]),
                    _ => contents.push(new_content("user", vec![part], Map::new())),
                }
                if let Some(last) = contents.last_mut() {
                    push_parts(last, media);
                }
                last_was_result = true;
            }
            Role::User | Role::Assistant => {
                let mut out = parts(m, &at, losses);
                for (n, call) in m.calls().iter().enumerate() {
                    let call_at = item(&child(&at, "tool_calls"), n);
                    call_names.push((call.id.clone(), call.function.name.clone()));
                    out.push(function_call(call, &call_at, calls_seen, losses));
                    calls_seen += 1;
                }
                if m.calls().is_empty() && m.content().is_none() {
                    losses.push(
                        child(&at, "content"),
                        Policy::Downgraded,
                        "missing or null content is written as no parts",
                    );
                } else if !m.calls().is_empty() && m.content.is_absent() {
                    losses.push(
                        child(&at, "content"),
                        Policy::Downgraded,
                        "missing content next to calls parses back as null",
                    );
                } else if !m.calls().is_empty()
                    && matches!(m.content(), Some(Content::Parts(p)) if p.is_empty())
                {
                    losses.push(
                        child(&at, "content"),
                        Policy::Downgraded,
                        "an empty part list next to calls parses back as null",
                    );
                }
                let role = if m.role == Role::Assistant {
                    "model"
                } else {
                    "user"
                };
                let extra = for_target(&m.extra, ME, &at, losses);
                // A user turn right after function responses joins their turn (which may already
                // hold a result's media), so that the contents alternate and decode the same way.
                match contents.last_mut() {
                    Some(last)
                        if last_was_result
                            && role == "user"
                            && extra.is_empty()
                            && !out.is_empty() =>
                    {
                        push_parts(last, out)
                    }
                    _ => contents.push(new_content(role, out, extra)),
                }
                last_was_result = false;
            }
        }
    }
    let mut out = Map::new();
    if !system_parts.is_empty() || messages.iter().any(|(_, m)| m.role == Role::System) {
        out.insert("system_instruction".into(), json!({"parts": system_parts}));
    }
    out.insert(
        "contents".into(),
        Value::Array(contents.into_iter().map(Value::Object).collect()),
    );
    let mut extra = params::without(&conversation.extra);
    let camel = extra
        .get_mut(&namespace(ME))
        .and_then(Value::as_object_mut)
        .and_then(|ns| ns.shift_remove(SPELLING))
        .is_some_and(|s| s == spelling::CAMEL);
    let other_tools = extra
        .get_mut(&namespace(ME))
        .and_then(Value::as_object_mut)
        .and_then(|ns| ns.remove("tools"));
    if conversation.tools.is_some() || other_tools.is_some() {
        let mut list = Vec::new();
        if let Some(tools) = &conversation.tools {
            let decls: Vec<Value> = tools
                .iter()
                .enumerate()
                .map(|(i, t)| declaration(t, &item("/tools", i), losses))
                .collect();
            list.push(json!({"function_declarations": decls}));
        }
        if let Some(Value::Array(others)) = other_tools {
            list.extend(others);
        }
        out.insert("tools".into(), Value::Array(list));
    }
    merge_into(&mut out, &extra, ME, "", losses);
    params::write(ME, &conversation.extra, &mut out, losses);
    let mut out = Value::Object(out);
    if camel {
        spelling::camelize(&mut out);
    }
    out
}

fn new_content(role: &str, parts: Vec<Value>, extra: Map<String, Value>) -> Map<String, Value> {
    let mut content = Map::new();
    content.insert("role".into(), Value::String(role.into()));
    content.insert("parts".into(), Value::Array(parts));
    content.extend(extra);
    content
}

fn push_parts(content: &mut Map<String, Value>, more: Vec<Value>) {
    if let Some(Value::Array(parts)) = content.get_mut("parts") {
        parts.extend(more);
    }
}

fn fields(m: &Message, at: &str, losses: &mut Losses) {
    report_unsupported(
        m,
        at,
        "Gemini contents",
        &[
            Field::Id,
            Field::CreatedAt,
            Field::Channel,
            Field::Recipient,
            Field::Metadata,
        ],
        losses,
    );
}

/// The parts of a message's content.
fn parts(m: &Message, at: &str, losses: &mut Losses) -> Vec<Value> {
    match m.content() {
        None => Vec::new(),
        Some(Content::Text(text)) => vec![json!({"text": text})],
        Some(Content::Parts(parts)) => {
            let pointer = child(at, "content");
            parts
                .iter()
                .enumerate()
                .filter_map(|(i, p)| part(p, m.role, &item(&pointer, i), losses))
                .collect()
        }
    }
}

fn function_call(call: &chorus_core::ToolCall, at: &str, n: usize, losses: &mut Losses) -> Value {
    let args = arguments::as_object(call, at, losses);
    let mut fc = json!({"name": call.function.name, "args": args});
    if call.id != call_ids::numbered(n) {
        fc["id"] = Value::String(call.id.clone());
    }
    if let Value::Object(map) = &mut fc {
        merge_into(
            map,
            &call.function.extra,
            ME,
            &child(at, "function"),
            losses,
        );
    }
    let mut part = Map::new();
    part.insert("function_call".into(), fc);
    merge_into(&mut part, &call.extra, ME, at, losses);
    Value::Object(part)
}

/// A function_response part, and the media of the result that moves after it.
fn function_response(
    m: &Message,
    at: &str,
    calls: &[(String, String)],
    losses: &mut Losses,
) -> (Value, Vec<Value>) {
    let id = m.tool_call_id.clone().unwrap_or_default();
    let call_name = calls.iter().find(|(c, _)| *c == id).map(|(_, n)| n.clone());
    let name = match (&m.name, call_name) {
        (Some(name), _) => name.clone(),
        (None, Some(name)) => {
            losses.push(
                child(at, "name"),
                Policy::Downgraded,
                "Gemini function responses carry the function name; taken from the call",
            );
            name
        }
        (None, None) => String::new(),
    };
    // Text blocks of a result are lines of it, not one glued word ("Sunny" + "22 degrees").
    let text = m.text_joined("\n");
    let response = match chorus_core::ToolOutcome::from_text(&text) {
        chorus_core::ToolOutcome::Error {
            error_type,
            message,
        } => {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "an error result is sent under the documented `error` key of the response",
            );
            json!({"error": {"error_type": error_type, "message": message}})
        }
        _ => success_response(m, &text, at, losses),
    };
    let mut fr = json!({"name": name, "response": response});
    let generated = calls
        .iter()
        .position(|(c, _)| *c == id)
        .map(call_ids::numbered);
    if generated.as_deref() != Some(id.as_str()) {
        fr["id"] = Value::String(id);
    }
    let mut media = Vec::new();
    if let Some(Content::Parts(parts)) = m.content() {
        for (i, p) in parts.iter().enumerate() {
            if !matches!(p, ContentPart::Text(_)) {
                let p_at = item(&child(at, "content"), i);
                if let Some(v) = part(p, Role::Tool, &p_at, losses) {
                    losses.push(
                        p_at,
                        Policy::Moved,
                        "media of a function response sent as a part after it",
                    );
                    media.push(v);
                }
            }
        }
    }
    let mut extra = for_target(&m.extra, ME, at, losses);
    let part_keys: Map<String, Value> = extra
        .iter()
        .filter(|(k, _)| k.as_str() == "thought_signature" || k.as_str() == "thoughtSignature")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    extra.retain(|k, _| !part_keys.contains_key(k));
    if let Value::Object(map) = &mut fr {
        map.extend(extra);
    }
    let mut p = Map::new();
    p.insert("function_response".into(), fr);
    p.extend(part_keys);
    (Value::Object(p), media)
}

/// A result as the JSON object Gemini wants: the object the text holds, or `{"result": text}`.
fn success_response(m: &Message, text: &str, at: &str, losses: &mut Losses) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => {
            if arguments::compact(&map) != text || !matches!(m.content(), Some(Content::Text(_))) {
                losses.push(
                    child(at, "content"),
                    Policy::Downgraded,
                    "the result is sent as the JSON object it holds",
                );
            }
            Value::Object(map)
        }
        _ => {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "a result that is not a JSON object is wrapped as {\"result\": text}",
            );
            json!({"result": text})
        }
    }
}

fn declaration(tool: &chorus_core::ToolDefinition, at: &str, losses: &mut Losses) -> Value {
    let f = &tool.function;
    let mut out = json!({"name": f.name});
    if let Some(d) = &f.description {
        out["description"] = Value::String(d.clone());
    }
    if let Some(p) = &f.parameters {
        out["parameters"] = p.clone();
    }
    if f.strict.is_some() {
        losses.push(
            format!("{}/function/strict", at),
            Policy::Dropped,
            "Gemini declarations have no `strict`",
        );
    }
    if tool.kind.as_deref().is_some_and(|k| k != "function") {
        losses.push(
            child(at, "type"),
            Policy::Dropped,
            "Gemini function declarations have no tool type",
        );
    }
    if let Value::Object(map) = &mut out {
        merge_into(map, &f.extra, ME, &child(at, "function"), losses);
    }
    drop_all(&tool.extra, at, "a Gemini function declaration", losses);
    out
}
