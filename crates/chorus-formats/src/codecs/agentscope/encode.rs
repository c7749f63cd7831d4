//! chorus → AgentScope `Msg.to_dict()` JSON (an array of Msg).

use chorus_core::media::DataUrl;
use chorus_core::{Content, ContentPart, Conversation, CreatedAt, Message, Role};
use serde_json::{Map, Value, json};

use super::{MSG_FIELDS, MSG_NAME, MSG_ROLE};
use crate::Format;
use crate::common::arguments;
use crate::common::extras::{drop_all, for_target};
use crate::common::fields::{Field, report_unsupported};
use crate::common::json::{child, item};
use crate::common::media::{data_as_text, image_url};
use crate::common::origin::{is_from, unmarked};
use crate::common::pairing::paired_order;
use crate::loss::{Losses, Policy};

const ME: Format = Format::AgentScope;

/// Encodes a conversation as an array of AgentScope Msg dicts.
pub fn messages(conversation: &Conversation, losses: &mut Losses) -> Value {
    if conversation.tools.is_some() {
        losses.push(
            "/tools",
            Policy::Dropped,
            "AgentScope messages do not carry tool definitions",
        );
    }
    drop_all(
        &conversation.extra,
        "",
        "an AgentScope message list",
        losses,
    );
    let order = paired_order(&conversation.messages, losses);
    let mut out: Vec<Map<String, Value>> = Vec::new();
    let mut last_tool_msg_id: Option<String> = None;
    for i in order {
        let m = &conversation.messages[i];
        let at = item("/messages", i);
        let mut extra = for_target(&m.extra, ME, &at, losses);
        if m.role == Role::Tool {
            let block = tool_result(m, &conversation.messages, &at, &mut extra, losses);
            let same = m.id.is_some() && m.id == last_tool_msg_id;
            if let (true, Some(Value::Array(blocks))) =
                (same, out.last_mut().and_then(|msg| msg.get_mut("content")))
            {
                blocks.push(block);
                continue;
            }
            let name = extra.remove(MSG_NAME).unwrap_or_else(|| "system".into());
            let role = extra.remove(MSG_ROLE).unwrap_or_else(|| "system".into());
            let fields = match extra.remove(MSG_FIELDS) {
                Some(Value::Object(fields)) => fields,
                _ => Map::new(),
            };
            out.push(msg(
                m,
                name,
                role,
                Value::Array(vec![block]),
                fields,
                &at,
                losses,
            ));
            last_tool_msg_id = m.id.clone();
            continue;
        }
        last_tool_msg_id = None;
        let name = match &m.name {
            Some(name) => name.clone(),
            None => {
                losses.push(
                    child(&at, "name"),
                    Policy::Downgraded,
                    "AgentScope needs a speaker name; the role is used",
                );
                m.role.as_str().to_owned()
            }
        };
        let role = match m.role {
            Role::Developer => {
                losses.push(
                    child(&at, "role"),
                    Policy::Downgraded,
                    "developer message sent as system",
                );
                "system"
            }
            other => other.as_str(),
        };
        let content = content(m, &at, losses);
        out.push(msg(
            m,
            name.into(),
            role.into(),
            content,
            extra,
            &at,
            losses,
        ));
    }
    Value::Array(out.into_iter().map(Value::Object).collect())
}

fn msg(
    m: &Message,
    name: Value,
    role: Value,
    content: Value,
    extra: Map<String, Value>,
    at: &str,
    losses: &mut Losses,
) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(id) = &m.id {
        out.insert("id".into(), Value::String(id.clone()));
    }
    out.insert("name".into(), name);
    out.insert("role".into(), role);
    out.insert("content".into(), content);
    if let Some(metadata) = &m.metadata {
        out.insert(
            "metadata".into(),
            serde_json::to_value(metadata).unwrap_or(Value::Null),
        );
    }
    match &m.created_at {
        Some(CreatedAt::Text(t)) => {
            out.insert("timestamp".into(), Value::String(t.clone()));
        }
        Some(CreatedAt::Unix(_)) => losses.push(
            child(at, "created_at"),
            Policy::Dropped,
            "AgentScope timestamps are date-time strings",
        ),
        None => {}
    }
    report_unsupported(
        m,
        at,
        "AgentScope messages",
        &[Field::Channel, Field::Recipient, Field::ToolCallId],
        losses,
    );
    for (key, value) in extra {
        out.entry(key).or_insert(value);
    }
    out
}

fn content(m: &Message, at: &str, losses: &mut Losses) -> Value {
    let mut blocks = match m.content() {
        Some(Content::Text(t)) if m.calls().is_empty() => return Value::String(t.clone()),
        Some(Content::Text(t)) => {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "text next to tool calls is written as a text block",
            );
            vec![json!({"type": "text", "text": t})]
        }
        Some(Content::Parts(parts)) => {
            if parts.is_empty() && !m.calls().is_empty() {
                losses.push(
                    child(at, "content"),
                    Policy::Downgraded,
                    "an empty block list next to calls comes back as null",
                );
            }
            self::blocks(parts, &child(at, "content"), losses)
        }
        None => {
            if m.content.is_absent() || m.calls().is_empty() {
                losses.push(
                    child(at, "content"),
                    Policy::Downgraded,
                    "missing or null content is written as an empty block list",
                );
            }
            Vec::new()
        }
    };
    for (n, call) in m.calls().iter().enumerate() {
        let c_at = item(&child(at, "tool_calls"), n);
        let input = arguments::as_object(call, &c_at, losses);
        let mut block =
            json!({"type": "tool_use", "id": call.id, "name": call.function.name, "input": input});
        if let Value::Object(map) = &mut block {
            map.extend(for_target(&call.extra, ME, &c_at, losses));
        }
        drop_all(
            &call.function.extra,
            &child(&c_at, "function"),
            "an AgentScope tool_use",
            losses,
        );
        if call.kind.as_deref().is_some_and(|k| k != "function") {
            losses.push(
                child(&c_at, "type"),
                Policy::Dropped,
                "AgentScope tool uses are functions",
            );
        }
        blocks.push(block);
    }
    Value::Array(blocks)
}

fn tool_result(
    m: &Message,
    all: &[Message],
    at: &str,
    extra: &mut Map<String, Value>,
    losses: &mut Losses,
) -> Value {
    let id = m.tool_call_id.clone().unwrap_or_default();
    let name = match &m.name {
        Some(n) => n.clone(),
        None => {
            losses.push(
                child(at, "name"),
                Policy::Downgraded,
                "AgentScope tool results carry the function name; taken from the call",
            );
            all.iter()
                .flat_map(|c| c.calls())
                .find(|c| c.id == id)
                .map(|c| c.function.name.clone())
                .unwrap_or_default()
        }
    };
    let output = match m.content() {
        Some(Content::Text(t)) => Value::String(t.clone()),
        Some(Content::Parts(parts)) => Value::Array(blocks(parts, &child(at, "content"), losses)),
        None => {
            losses.push(
                child(at, "content"),
                Policy::Downgraded,
                "missing or null output is written as an empty string",
            );
            Value::String(String::new())
        }
    };
    let mut block = json!({"type": "tool_result", "id": id, "name": name, "output": output});
    if let Value::Object(map) = &mut block {
        let keep: Vec<String> = extra
            .keys()
            .filter(|k| ![MSG_NAME, MSG_ROLE, MSG_FIELDS].contains(&k.as_str()))
            .cloned()
            .collect();
        for key in keep {
            if let Some(v) = extra.remove(&key) {
                map.insert(key, v);
            }
        }
    }
    block
}

fn blocks(parts: &[ContentPart], pointer: &str, losses: &mut Losses) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let at = item(pointer, i);
        let (block, extra) = match part {
            ContentPart::Text(t) => {
                if t.index.is_some() {
                    losses.push(
                        child(&at, "index"),
                        Policy::Dropped,
                        "AgentScope blocks have no `index`",
                    );
                }
                (json!({"type": "text", "text": t.text}), &t.extra)
            }
            ContentPart::Reasoning(r) => {
                if r.signature.is_some() {
                    losses.push(
                        child(&at, "signature"),
                        Policy::Dropped,
                        "AgentScope thinking blocks have no signature",
                    );
                }
                (json!({"type": "thinking", "thinking": r.text}), &r.extra)
            }
            ContentPart::Image(img) => {
                let url = image_url(img, &at, false, losses);
                drop_all(
                    &img.image_url.extra,
                    &child(&at, "image_url"),
                    "an AgentScope image source",
                    losses,
                );
                let source = match DataUrl::parse(&url) {
                    Some(d) => {
                        json!({"type": "base64", "media_type": d.media_type, "data": d.base64})
                    }
                    None => json!({"type": "url", "url": url}),
                };
                (json!({"type": "image", "source": source}), &img.extra)
            }
            ContentPart::Audio(a) => {
                if a.input_audio.sample_rate.is_some() {
                    losses.push(
                        format!("{at}/input_audio/sample_rate"),
                        Policy::Dropped,
                        "AgentScope audio has no sample rate",
                    );
                }
                drop_all(
                    &a.input_audio.extra,
                    &child(&at, "input_audio"),
                    "an AgentScope audio source",
                    losses,
                );
                let source = json!({"type": "base64", "media_type": format!("audio/{}", a.input_audio.format), "data": a.input_audio.data});
                (json!({"type": "audio", "source": source}), &a.extra)
            }
            ContentPart::Data(d) => {
                out.push(json!({"type": "text", "text": data_as_text(d, &at, losses)}));
                continue;
            }
            ContentPart::Other(o) if is_from(o, ME) => {
                out.push(Value::Object(unmarked(o)));
                continue;
            }
            other => {
                losses.push(
                    at,
                    Policy::Dropped,
                    format!("AgentScope has no block for a `{}` part", other.type_name()),
                );
                continue;
            }
        };
        let mut block = block;
        if let Value::Object(map) = &mut block {
            map.extend(for_target(extra, ME, &at, losses));
        }
        out.push(block);
    }
    out
}
