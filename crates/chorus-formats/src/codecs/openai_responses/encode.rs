//! chorus → OpenAI Responses API request (`instructions`, `input` items, `tools`).

use chorus_core::{Content, ContentPart, Conversation, Message, Role};
use serde_json::{Map, Value, json};

use super::decode::stage;
use super::parts;
use super::{INSTRUCTIONS, ITEM};
use crate::Format;
use crate::common::extras::{drop_all, for_target, merge_into, namespace};
use crate::common::fields::{Field, report_unsupported};
use crate::common::json::{child, item};
use crate::common::origin::unmarked;
use crate::common::outgoing::{Pairing, unnamed};
use crate::common::params;
use crate::loss::{Losses, Policy};
use crate::options::EncodeOptions;

const ME: Format = Format::OpenAiResponses;

fn marked(m: &Message, key: &str) -> bool {
    m.extra.get(&namespace(ME)).and_then(|ns| ns.get(key)) == Some(&Value::Bool(true))
}

/// The message's extras without chorus' own markers.
fn extras(m: &Message, at: &str, losses: &mut Losses) -> Map<String, Value> {
    let mut out = for_target(&m.extra, ME, at, losses);
    out.remove(INSTRUCTIONS);
    out.remove(ITEM);
    out
}

/// Encodes a conversation as a Responses request.
pub fn request(conversation: &Conversation, options: &EncodeOptions, losses: &mut Losses) -> Value {
    let messages = unnamed(conversation, Pairing::WithoutOrphans, options.names, losses);
    let mut out = Map::new();
    let mut input = Vec::new();
    let mut prev_stage: Option<u8> = None;
    for (n, (i, m)) in messages.iter().enumerate() {
        let at = item("/messages", *i);
        if m.role == Role::System
            && n == 0
            && marked(m, INSTRUCTIONS)
            && let Some(Content::Text(text)) = m.content()
        {
            out.insert("instructions".into(), Value::String(text.clone()));
            fields(m, &at, losses);
            extras(m, &at, losses);
            continue;
        }
        if marked(m, ITEM)
            && let Some(Content::Parts(parts)) = m.content()
            && let [ContentPart::Other(item)] = parts.as_slice()
        {
            input.push(Value::Object(unmarked(item)));
            continue;
        }
        fields(m, &at, losses);
        if m.role != Role::Assistant {
            prev_stage = None;
        }
        match m.role {
            Role::Tool => input.push(tool_output(m, &at, losses)),
            Role::Assistant => {
                let start = input.len();
                assistant(m, &at, &mut input, losses);
                let stages: Vec<u8> = input[start..].iter().filter_map(item_stage).collect();
                if let (Some(prev), Some(&first)) = (prev_stage, stages.first())
                    && (first > prev || (first == prev && first != 1))
                {
                    losses.push(
                        &at,
                        Policy::Merged,
                        "follows an assistant turn it merges into when read back",
                    );
                }
                prev_stage = stages.last().copied();
                continue;
            }
            role => input.push(message(m, role.as_str(), &at, losses)),
        }
    }
    out.insert("input".into(), Value::Array(input));
    let mut extra = params::without(&conversation.extra);
    let other_tools = extra
        .get_mut(&namespace(ME))
        .and_then(Value::as_object_mut)
        .and_then(|ns| ns.remove("tools"));
    if conversation.tools.is_some() || other_tools.is_some() {
        let mut list: Vec<Value> = Vec::new();
        for (i, t) in conversation.tools.iter().flatten().enumerate() {
            let at = item("/tools", i);
            let f = &t.function;
            let mut tool = json!({"type": "function", "name": f.name});
            if let Some(d) = &f.description {
                tool["description"] = Value::String(d.clone());
            }
            // The request type requires both; a Responses tool is strict unless it says not,
            // while a chorus (Chat Completions) tool is not unless it says so.
            tool["parameters"] = f.parameters.clone().unwrap_or(Value::Null);
            tool["strict"] = Value::Bool(f.strict.unwrap_or(false));
            if t.kind.as_deref().is_some_and(|k| k != "function") {
                losses.push(
                    child(&at, "type"),
                    Policy::Dropped,
                    "sent as a function tool",
                );
            }
            if let Value::Object(map) = &mut tool {
                merge_into(map, &f.extra, ME, &child(&at, "function"), losses);
            }
            drop_all(&t.extra, &at, "a Responses function tool", losses);
            list.push(tool);
        }
        if let Some(Value::Array(others)) = other_tools {
            list.extend(others);
        }
        out.insert("tools".into(), Value::Array(list));
    }
    merge_into(&mut out, &extra, ME, "", losses);
    params::write(ME, &conversation.extra, &mut out, losses);
    Value::Object(out)
}

/// Where an item stands in an assistant turn: reasoning, message, function_call.
fn item_stage(item: &Value) -> Option<u8> {
    item.get("type").and_then(Value::as_str).and_then(stage)
}

fn fields(m: &Message, at: &str, losses: &mut Losses) {
    let fields: &[Field] = if m.role == Role::Assistant {
        &[
            Field::Name,
            Field::CreatedAt,
            Field::Channel,
            Field::Recipient,
            Field::Metadata,
        ]
    } else {
        &[
            Field::Name,
            Field::Id,
            Field::CreatedAt,
            Field::Channel,
            Field::Recipient,
            Field::Metadata,
        ]
    };
    report_unsupported(m, at, "Responses items", fields, losses);
}

fn message(m: &Message, role: &str, at: &str, losses: &mut Losses) -> Value {
    let mut item = Map::new();
    item.insert("role".into(), Value::String(role.into()));
    let content = match m.content() {
        Some(Content::Text(t)) => Value::String(t.clone()),
        Some(Content::Parts(parts)) => {
            Value::Array(parts::encode(parts, m.role, &child(at, "content"), losses))
        }
        None => {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "missing or null content is written as an empty string",
            );
            Value::String(String::new())
        }
    };
    item.insert("content".into(), content);
    item.extend(extras(m, at, losses));
    Value::Object(item)
}

/// Reasoning items, then the message item, then one function_call item per call.
fn assistant(m: &Message, at: &str, input: &mut Vec<Value>, losses: &mut Losses) {
    let mut rest: Vec<ContentPart> = Vec::new();
    let all = match m.content() {
        Some(Content::Parts(parts)) => parts.clone(),
        _ => Vec::new(),
    };
    let mut emitted = 0;
    for (i, part) in all.iter().enumerate() {
        let p_at = item(&child(at, "content"), i);
        if let ContentPart::Reasoning(r) = part {
            if !rest.is_empty() {
                losses.push(
                    &p_at,
                    Policy::Moved,
                    "reasoning items come before the message item",
                );
            }
            let mut extra = for_target(&r.extra, ME, &p_at, losses);
            if !extra.contains_key("id") {
                losses.push(
                    &p_at,
                    Policy::Dropped,
                    "the Responses API takes back only the reasoning items it produced (with their `id`)",
                );
                continue;
            }
            emitted += 1;
            let summary = extra.remove("summary").unwrap_or_else(|| {
                if r.text.is_empty() {
                    json!([])
                } else {
                    json!([{"type": "summary_text", "text": r.text}])
                }
            });
            let mut item = json!({"type": "reasoning", "summary": summary});
            if let Some(sig) = &r.signature {
                item["encrypted_content"] = Value::String(sig.clone());
            }
            if let Value::Object(map) = &mut item {
                map.extend(extra);
            }
            input.push(item);
        } else {
            rest.push(part.clone());
        }
    }
    let text_form = matches!(m.content(), Some(Content::Text(_)));
    if text_form || !rest.is_empty() || (m.calls().is_empty() && emitted == 0) {
        let content = match m.content() {
            Some(Content::Text(t)) => vec![json!({"type": "output_text", "text": t})],
            _ => parts::encode(&rest, Role::Assistant, &child(at, "content"), losses),
        };
        if m.content().is_none() {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "missing or null content is written as an empty text",
            );
        }
        let mut item = match &m.id {
            Some(id) => output_message(id, content),
            None => input_message(content, m.content().is_some(), at, losses),
        };
        item.extend(extras(m, at, losses));
        input.push(Value::Object(item));
    } else {
        if m.id.is_some() {
            losses.push(
                child(at, "id"),
                Policy::Dropped,
                "no message item to carry the id",
            );
        }
        drop_all(&m.extra, at, "a Responses function_call", losses);
        let only_reasoning = emitted > 0;
        if m.content.is_absent()
            || (matches!(m.content(), Some(Content::Parts(p)) if p.is_empty())
                && !m.calls().is_empty())
            || (only_reasoning && m.calls().is_empty())
        {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "content without a message item comes back as null or reasoning only",
            );
        }
    }
    for (n, call) in m.calls().iter().enumerate() {
        let c_at = item(&child(at, "tool_calls"), n);
        let mut item = json!({"type": "function_call", "call_id": call.id, "name": call.function.name, "arguments": call.function.arguments});
        if let Value::Object(map) = &mut item {
            merge_into(map, &call.extra, ME, &c_at, losses);
        }
        drop_all(
            &call.function.extra,
            &child(&c_at, "function"),
            "a Responses function_call",
            losses,
        );
        if call.kind.as_deref().is_some_and(|k| k != "function") {
            losses.push(
                child(&c_at, "type"),
                Policy::Dropped,
                "Responses calls are function calls",
            );
        }
        input.push(item);
    }
}

/// An assistant message with the id the API gave it: an output message item, whose request type
/// requires a status and each text's annotations.
fn output_message(id: &str, content: Vec<Value>) -> Map<String, Value> {
    let content = content
        .into_iter()
        .map(|mut part| {
            if let Value::Object(p) = &mut part
                && p.get("type").is_some_and(|t| t == "output_text")
                && !p.contains_key("annotations")
            {
                p.insert("annotations".into(), json!([]));
            }
            part
        })
        .collect();
    let mut item = Map::new();
    item.insert("type".into(), "message".into());
    item.insert("id".into(), Value::String(id.to_owned()));
    item.insert("role".into(), "assistant".into());
    item.insert("status".into(), "completed".into());
    item.insert("content".into(), Value::Array(content));
    item
}

/// An assistant message without an id: an input message, whose request type takes the text as one
/// string (several plain text parts are joined, which is reported).
fn input_message(
    content: Vec<Value>,
    has_content: bool,
    at: &str,
    losses: &mut Losses,
) -> Map<String, Value> {
    let plain = |p: &Value| {
        p.as_object()
            .is_some_and(|o| o.len() == 2 && o["type"] == "output_text")
    };
    let content = if content.iter().all(plain) {
        if content.is_empty() && has_content {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "an assistant message without parts is written as an empty text",
            );
        } else if content.len() > 1 {
            losses.push(
                child(at, "content"),
                Policy::Merged,
                "an assistant message without an id takes its text as one string; the text parts are joined",
            );
        }
        let texts: Vec<&str> = content.iter().filter_map(|p| p["text"].as_str()).collect();
        Value::String(texts.join("\n"))
    } else {
        Value::Array(content)
    };
    let mut item = Map::new();
    item.insert("type".into(), "message".into());
    item.insert("role".into(), "assistant".into());
    item.insert("content".into(), content);
    item
}

fn tool_output(m: &Message, at: &str, losses: &mut Losses) -> Value {
    let output = match m.content() {
        Some(Content::Text(t)) => Value::String(t.clone()),
        Some(Content::Parts(parts)) => Value::Array(parts::encode(
            parts,
            Role::Tool,
            &child(at, "content"),
            losses,
        )),
        None => {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "missing or null output is written as an empty string",
            );
            Value::String(String::new())
        }
    };
    let mut item = json!({"type": "function_call_output", "call_id": m.tool_call_id.clone().unwrap_or_default(), "output": output});
    if let Value::Object(map) = &mut item {
        map.extend(extras(m, at, losses));
    }
    item
}
