//! chorus → Chat Completions request JSON.

use chorus_core::{Content, ContentPart, Conversation, Message, Nullable, Role, ToolCall};
use serde_json::{Map, Value, json};

use crate::Format;
use crate::common::extras::{drop_all, merge_into};
use crate::common::fields::{Field, report_unsupported};
use crate::common::json::{Items, child, item};
use crate::common::media::{data_as_text, image_url};
use crate::common::origin::origin;
use crate::common::pairing::paired_order;
use crate::loss::{Losses, Policy};

/// Encodes a conversation as a Chat Completions request.
pub fn request(conversation: &Conversation, losses: &mut Losses) -> Value {
    let mut out = Map::new();
    out.insert(
        "messages".into(),
        Value::Array(messages(&conversation.messages, losses)),
    );
    if let Some(tools) = &conversation.tools {
        out.insert(
            "tools".into(),
            serde_json::to_value(tools).unwrap_or(Value::Null),
        );
    }
    merge_into(
        &mut out,
        &conversation.extra,
        Format::OpenAiChat,
        "",
        losses,
    );
    Value::Object(out)
}

/// Encodes messages; media returned by tools moves into a user message after the tool run.
pub fn messages(messages: &[Message], losses: &mut Losses) -> Vec<Value> {
    let order = paired_order(messages, losses);
    let mut out = Vec::with_capacity(order.len() + 1);
    let mut moved: Vec<Value> = Vec::new();
    let mut pointers = Items::new("/messages");
    for (n, &i) in order.iter().enumerate() {
        let (value, media) = message(&messages[i], pointers.at(i), losses);
        out.push(value);
        if !media.is_empty() {
            let id = messages[i].tool_call_id.as_deref().unwrap_or_default();
            moved.push(
                json!({"type": "text", "text": format!("Media returned by tool call {id}:")}),
            );
            moved.extend(media);
        }
        let run_ends = order
            .get(n + 1)
            .is_none_or(|&next| messages[next].role != Role::Tool);
        if run_ends && !moved.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut moved)}));
        }
    }
    out
}

/// One message, and the media parts that must move out of it (tool results only).
pub(super) fn message(m: &Message, pointer: &str, losses: &mut Losses) -> (Value, Vec<Value>) {
    let mut out = Map::new();
    out.insert("role".into(), Value::String(m.role.as_str().into()));
    if let Some(name) = &m.name {
        out.insert("name".into(), Value::String(name.clone()));
    }
    let mut moved = Vec::new();
    let content = match &m.content {
        Nullable::Absent => None,
        // Only an assistant message may have no content in a request.
        Nullable::Null if m.role != Role::Assistant => {
            losses.push(
                child(pointer, "content"),
                Policy::Downgraded,
                "null content is written as an empty text (only assistant content may be null)",
            );
            Some((Value::String(String::new()), None))
        }
        Nullable::Null => Some((Value::Null, None)),
        Nullable::Value(Content::Text(text)) => Some((Value::String(text.clone()), None)),
        Nullable::Value(Content::Parts(parts)) => Some(self::parts(
            m.role,
            parts,
            &child(pointer, "content"),
            &mut moved,
            losses,
        )),
    };
    if let Some((value, reasoning)) = content {
        out.insert("content".into(), value);
        if let Some(reasoning) = reasoning {
            out.insert("reasoning_content".into(), Value::String(reasoning));
        }
    }
    match &m.tool_calls {
        Nullable::Absent => {}
        Nullable::Null => {
            out.insert("tool_calls".into(), Value::Null);
        }
        Nullable::Value(calls) => {
            let calls_at = child(pointer, "tool_calls");
            let calls = calls
                .iter()
                .enumerate()
                .map(|(i, c)| tool_call(c, &item(&calls_at, i), losses))
                .collect();
            out.insert("tool_calls".into(), Value::Array(calls));
        }
    }
    if let Some(id) = &m.tool_call_id {
        out.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    report_unsupported(
        m,
        pointer,
        "Chat Completions messages",
        &[
            Field::Id,
            Field::CreatedAt,
            Field::Channel,
            Field::Recipient,
            Field::Metadata,
        ],
        losses,
    );
    merge_into(&mut out, &m.extra, Format::OpenAiChat, pointer, losses);
    (Value::Object(out), moved)
}

/// The content parts and the reasoning text taken out of them.
fn parts(
    role: Role,
    parts: &[ContentPart],
    pointer: &str,
    moved: &mut Vec<Value>,
    losses: &mut Losses,
) -> (Value, Option<String>) {
    let mut out = Vec::with_capacity(parts.len());
    let mut reasoning: Option<String> = None;
    for (i, part) in parts.iter().enumerate() {
        let at = item(pointer, i);
        if let ContentPart::Reasoning(r) = part {
            if role != Role::Assistant {
                losses.push(
                    at,
                    Policy::Dropped,
                    "Chat Completions carries reasoning only on assistant messages",
                );
                continue;
            }
            if !out.is_empty() {
                losses.push(
                    &at,
                    Policy::Moved,
                    "reasoning moved before the content (reasoning_content)",
                );
            }
            if r.signature.is_some() {
                losses.push(
                    child(&at, "signature"),
                    Policy::Dropped,
                    "reasoning_content has no signature",
                );
            }
            drop_all(&r.extra, &at, "reasoning_content", losses);
            match &mut reasoning {
                Some(text) => {
                    losses.push(
                        &at,
                        Policy::Merged,
                        "several reasoning parts joined into one reasoning_content",
                    );
                    text.push_str(&r.text);
                }
                None => reasoning = Some(r.text.clone()),
            }
            continue;
        }
        let media = matches!(
            part,
            ContentPart::Image(_) | ContentPart::Audio(_) | ContentPart::File(_)
        );
        if media && matches!(role, Role::System | Role::Developer | Role::Assistant) {
            losses.push(
                at,
                Policy::Dropped,
                format!(
                    "Chat Completions {} messages take text parts only",
                    role.as_str()
                ),
            );
            continue;
        }
        let Some(value) = part_value(part, &at, losses) else {
            continue;
        };
        let is_media = !matches!(part, ContentPart::Text(_) | ContentPart::Data(_));
        if role == Role::Tool && is_media {
            losses.push(
                at,
                Policy::Moved,
                "media in a tool result moved to a user message after the tool results",
            );
            moved.push(value);
        } else {
            out.push(value);
        }
    }
    if reasoning.is_some() {
        if out.is_empty() {
            return (Value::Null, reasoning);
        }
        if let [Value::Object(only)] = out.as_slice()
            && only.len() == 2
            && only["type"] == "text"
        {
            return (only["text"].clone(), reasoning);
        }
    }
    (Value::Array(out), reasoning)
}

/// One content part as Chat Completions writes it.
fn part_value(part: &ContentPart, at: &str, losses: &mut Losses) -> Option<Value> {
    let (mut map, extra) = match part {
        ContentPart::Text(t) => {
            if t.index.is_some() {
                losses.push(
                    child(at, "index"),
                    Policy::Dropped,
                    "Chat Completions parts have no `index`",
                );
            }
            (json_map(json!({"type": "text", "text": t.text})), &t.extra)
        }
        ContentPart::Image(img) => {
            let url = image_url(img, at, true, losses);
            let mut inner = json_map(json!({"url": url}));
            if let Some(detail) = img.image_url.detail {
                inner.insert(
                    "detail".into(),
                    serde_json::to_value(detail).unwrap_or(Value::Null),
                );
            }
            merge_into(
                &mut inner,
                &img.image_url.extra,
                Format::OpenAiChat,
                &child(at, "image_url"),
                losses,
            );
            (
                json_map(json!({"type": "image_url", "image_url": inner})),
                &img.extra,
            )
        }
        ContentPart::Audio(a) => {
            if a.input_audio.sample_rate.is_some() {
                losses.push(
                    format!("{}/input_audio/sample_rate", at),
                    Policy::Dropped,
                    "Chat Completions audio has no sample rate",
                );
            }
            let mut inner =
                json_map(json!({"data": a.input_audio.data, "format": a.input_audio.format}));
            merge_into(
                &mut inner,
                &a.input_audio.extra,
                Format::OpenAiChat,
                &child(at, "input_audio"),
                losses,
            );
            (
                json_map(json!({"type": "input_audio", "input_audio": inner})),
                &a.extra,
            )
        }
        ContentPart::File(f) => {
            let mut inner = Map::new();
            let file_at = child(at, "file");
            for (key, value) in [
                ("file_id", &f.file.file_id),
                ("file_data", &f.file.file_data),
                ("filename", &f.file.filename),
            ] {
                if let Some(v) = value {
                    inner.insert(key.into(), Value::String(v.clone()));
                }
            }
            for (key, value) in [("url", &f.file.url), ("mime_type", &f.file.mime_type)] {
                if value.is_some() {
                    losses.push(
                        child(&file_at, key),
                        Policy::Dropped,
                        format!("Chat Completions files have no `{key}`"),
                    );
                }
            }
            merge_into(
                &mut inner,
                &f.file.extra,
                Format::OpenAiChat,
                &file_at,
                losses,
            );
            (json_map(json!({"type": "file", "file": inner})), &f.extra)
        }
        ContentPart::Data(d) => {
            return Some(json!({"type": "text", "text": data_as_text(d, at, losses)}));
        }
        ContentPart::Reasoning(_) => unreachable!("reasoning is taken out before"),
        ContentPart::Other(other) => {
            if let Some(origin) = origin(other) {
                losses.push(
                    at,
                    Policy::Dropped,
                    format!("a {origin} block that Chat Completions has no part for"),
                );
                return None;
            }
            return Some(Value::Object(other.clone()));
        }
    };
    merge_into(&mut map, extra, Format::OpenAiChat, at, losses);
    Some(Value::Object(map))
}

fn tool_call(call: &ToolCall, at: &str, losses: &mut Losses) -> Value {
    let mut function =
        json_map(json!({"name": call.function.name, "arguments": call.function.arguments}));
    merge_into(
        &mut function,
        &call.function.extra,
        Format::OpenAiChat,
        &child(at, "function"),
        losses,
    );
    let mut out =
        json_map(json!({"id": call.id, "type": call.kind.as_deref().unwrap_or("function")}));
    out.insert("function".into(), Value::Object(function));
    merge_into(&mut out, &call.extra, Format::OpenAiChat, at, losses);
    Value::Object(out)
}

fn json_map(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
