//! AgentScope `Msg.to_dict()` JSON → chorus.

use chorus_core::{
    AudioPart, Content, ContentPart, Conversation, CreatedAt, FunctionCall, InputAudio, Message,
    Metadata, Nullable, ReasoningPart, Role, TextPart, ToolCall,
};
use serde_json::{Map, Value};

use super::{MSG_FIELDS, MSG_NAME, MSG_ROLE};
use crate::Format;
use crate::common::extras::{part_extra, stash};
use crate::common::json::{
    array, child, describe, field, item, object, opt_string, string, unknown_keys,
};
use crate::common::media::image;
use crate::common::origin::marked;
use crate::common::roles;
use chorus_core::Problem;

const ME: Format = Format::AgentScope;

/// Decodes one `Msg` dict, an array of them, or `{"messages": [...]}`.
pub fn conversation(value: &Value) -> Result<Conversation, Problem> {
    let (list, pointer) = match value {
        Value::Array(list) => (list.as_slice(), ""),
        Value::Object(map) if map.contains_key("messages") => (
            array(&map["messages"], "/messages")?.as_slice(),
            "/messages",
        ),
        Value::Object(_) => (std::slice::from_ref(value), ""),
        other => {
            return Err(Problem::expected(
                "",
                "a Msg object or an array of them",
                describe(other),
            ));
        }
    };
    let mut messages = Vec::new();
    for (i, msg) in list.iter().enumerate() {
        let at = if pointer.is_empty() && value.is_object() {
            String::new()
        } else {
            item(pointer, i)
        };
        self::msg(msg, &at, &mut messages)?;
    }
    Ok(Conversation {
        messages,
        ..Conversation::default()
    })
}

fn msg(value: &Value, at: &str, out: &mut Vec<Message>) -> Result<(), Problem> {
    let map = object(value, at)?;
    let name = string(map, "name", at)
        .map_err(|e| e.with_hint("AgentScope messages always carry the speaker's `name`"))?;
    let role_text = string(map, "role", at)?;
    let allowed = [Role::User, Role::Assistant, Role::System];
    let role = roles::parse(role_text, &allowed).ok_or_else(|| {
        Problem::expected(
            child(at, "role"),
            "user, assistant or system",
            format!("{role_text:?}"),
        )
    })?;
    let id = opt_string(map, "id", at)?.map(str::to_owned);
    let timestamp = opt_string(map, "timestamp", at)?.map(|t| CreatedAt::Text(t.to_owned()));
    let mut unknown = unknown_keys(
        map,
        &["id", "name", "role", "content", "metadata", "timestamp"],
    );
    let metadata = match map.get("metadata") {
        None => None,
        Some(Value::Null) => {
            unknown.insert("metadata".into(), Value::Null);
            None
        }
        Some(v) => match serde_json::from_value::<Metadata>(v.clone()) {
            Ok(m) => Some(m),
            Err(_) => {
                unknown.insert("metadata".into(), v.clone());
                None
            }
        },
    };
    let base = |role: Role| {
        let mut m = Message::new(role, "");
        m.id = id.clone();
        m.created_at = timestamp.clone();
        m.metadata = metadata.clone();
        m
    };
    let content_at = child(at, "content");
    let blocks = match field(map, "content", at)? {
        Value::String(text) => {
            let mut m = base(role);
            m.name = Some(name.to_owned());
            m.content = Nullable::Value(Content::Text(text.clone()));
            stash(&mut m.extra, ME, unknown);
            out.push(m);
            return Ok(());
        }
        other => array(other, &content_at)?,
    };
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    let mut pending = false;
    for (i, block) in blocks.iter().enumerate() {
        let b_at = item(&content_at, i);
        let bm = object(block, &b_at)?;
        match string(bm, "type", &b_at)? {
            "tool_result" => {
                if pending {
                    out.push(named(
                        base(role),
                        name,
                        std::mem::take(&mut parts),
                        &unknown,
                    ));
                    pending = false;
                }
                let mut m = base(Role::Tool);
                m.tool_call_id = Some(string(bm, "id", &b_at)?.to_owned());
                m.name = Some(string(bm, "name", &b_at)?.to_owned());
                m.content = Nullable::Value(match field(bm, "output", &b_at)? {
                    Value::String(s) => Content::Text(s.clone()),
                    other => Content::Parts(self::parts(
                        array(other, &child(&b_at, "output"))?,
                        &child(&b_at, "output"),
                    )?),
                });
                let mut marks = unknown_keys(bm, &["type", "id", "name", "output"]);
                if name != "system" {
                    marks.insert(MSG_NAME.into(), Value::String(name.into()));
                }
                if role_text != "system" {
                    marks.insert(MSG_ROLE.into(), Value::String(role_text.into()));
                }
                if !unknown.is_empty() {
                    marks.insert(MSG_FIELDS.into(), Value::Object(unknown.clone()));
                }
                stash(&mut m.extra, ME, marks);
                out.push(m);
            }
            "tool_use" => {
                let input = field(bm, "input", &b_at)?;
                let mut call = ToolCall {
                    id: string(bm, "id", &b_at)?.to_owned(),
                    kind: Some("function".into()),
                    function: FunctionCall {
                        name: string(bm, "name", &b_at)?.to_owned(),
                        arguments: input.to_string(),
                        extra: Map::new(),
                    },
                    extra: Map::new(),
                };
                stash(
                    &mut call.extra,
                    ME,
                    unknown_keys(bm, &["type", "id", "name", "input"]),
                );
                calls.push(call);
                pending = true;
            }
            _ => {
                parts.push(part(block, &b_at)?);
                pending = true;
            }
        }
    }
    if pending || blocks.is_empty() {
        let empty = parts.is_empty();
        let mut m = named(base(role), name, parts, &unknown);
        if !calls.is_empty() {
            if empty {
                m.content = Nullable::Null;
            }
            m.tool_calls = Nullable::Value(calls);
        }
        out.push(m);
    }
    Ok(())
}

fn named(
    mut m: Message,
    name: &str,
    parts: Vec<ContentPart>,
    unknown: &Map<String, Value>,
) -> Message {
    m.name = Some(name.to_owned());
    m.content = Nullable::Value(Content::Parts(parts));
    stash(&mut m.extra, ME, unknown.clone());
    m
}

/// Blocks that are not tool use or tool results.
pub fn parts(blocks: &[Value], pointer: &str) -> Result<Vec<ContentPart>, Problem> {
    blocks
        .iter()
        .enumerate()
        .map(|(i, b)| part(b, &item(pointer, i)))
        .collect()
}

fn part(block: &Value, at: &str) -> Result<ContentPart, Problem> {
    let map = object(block, at)?;
    let source = map.get("source").and_then(Value::as_object);
    let source_kind = source.and_then(|s| s.get("type")).and_then(Value::as_str);
    let (mut part, known): (ContentPart, &[&str]) = match (string(map, "type", at)?, source_kind) {
        ("text", _) => (
            ContentPart::Text(TextPart {
                text: string(map, "text", at)?.to_owned(),
                ..TextPart::default()
            }),
            &["type", "text"],
        ),
        ("thinking", _) => (
            ContentPart::Reasoning(ReasoningPart {
                text: string(map, "thinking", at)?.to_owned(),
                ..ReasoningPart::default()
            }),
            &["type", "thinking"],
        ),
        ("image", Some(kind @ ("base64" | "url")))
            if source.is_some_and(|s| s.len() == if kind == "base64" { 3 } else { 2 }) =>
        {
            let s = source.expect("checked");
            let url = if kind == "base64" {
                format!(
                    "data:{};base64,{}",
                    string(s, "media_type", at)?,
                    string(s, "data", at)?
                )
            } else {
                string(s, "url", at)?.to_owned()
            };
            (ContentPart::Image(image(url)), &["type", "source"])
        }
        ("audio", Some("base64")) if source.is_some_and(|s| s.len() == 3) => {
            let s = source.expect("checked");
            let media = string(s, "media_type", at)?;
            let format = media.strip_prefix("audio/").unwrap_or(media).to_owned();
            let input_audio = InputAudio {
                data: string(s, "data", at)?.to_owned(),
                format,
                sample_rate: None,
                extra: Map::new(),
            };
            (
                ContentPart::Audio(AudioPart {
                    input_audio,
                    extra: Map::new(),
                }),
                &["type", "source"],
            )
        }
        _ => {
            return Ok(ContentPart::Other(marked(map, ME)));
        }
    };
    stash(part_extra(&mut part), ME, unknown_keys(map, known));
    Ok(part)
}
