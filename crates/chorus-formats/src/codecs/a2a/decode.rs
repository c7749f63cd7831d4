//! A2A `Message` objects → chorus; `metadata.chorus` restores what A2A has no field for.

use chorus_core::{ContentPart, Conversation, Message};
use serde_json::{Map, Value, json};

use super::{CHORUS, inferred_type};
use crate::Format;
use crate::common::extras::namespace;
use crate::common::json::{array, child, chorus_value, describe, item, object, string};
use chorus_core::Problem;

const ME: Format = Format::A2a;

/// Decodes one message, an array of them, a task (its `history`), or `{"messages": [...]}`.
pub fn conversation(value: &Value) -> Result<Conversation, Problem> {
    let (list, pointer): (&[Value], &str) = match value {
        Value::Array(list) => (list, ""),
        Value::Object(map) if map.get("kind").and_then(Value::as_str) == Some("task") => {
            let history = map
                .get("history")
                .map(|h| array(h, "/history"))
                .transpose()?;
            (history.map_or(&[][..], Vec::as_slice), "/history")
        }
        Value::Object(map) if map.contains_key("messages") => {
            (array(&map["messages"], "/messages")?, "/messages")
        }
        Value::Object(_) => (std::slice::from_ref(value), ""),
        other => {
            return Err(Problem::expected(
                "",
                "an A2A message, an array of them or a task",
                describe(other),
            ));
        }
    };
    let single = value.is_object() && pointer.is_empty();
    let messages = list
        .iter()
        .enumerate()
        .map(|(i, m)| {
            message(
                m,
                &if single {
                    String::new()
                } else {
                    item(pointer, i)
                },
            )
        })
        .collect::<Result<_, _>>()?;
    Ok(Conversation {
        messages,
        ..Conversation::default()
    })
}

fn split_metadata(map: &Map<String, Value>) -> (Map<String, Value>, Map<String, Value>) {
    let mut metadata = map
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let chorus = match metadata.remove(CHORUS) {
        Some(Value::Object(c)) => c,
        _ => Map::new(),
    };
    (chorus, metadata)
}

fn message(value: &Value, at: &str) -> Result<Message, Problem> {
    let map = object(value, at)?;
    let (mut out, metadata) = split_metadata(map);
    let role = match (out.remove("role"), string(map, "role", at)?) {
        (Some(role), _) => role,
        (None, "user") => json!("user"),
        (None, "agent") => json!("assistant"),
        (None, other) => {
            return Err(Problem::expected(
                child(at, "role"),
                "user or agent",
                format!("{other:?}"),
            ));
        }
    };
    out.insert("role".into(), role);
    let generated = out.remove("generated_id") == Some(Value::Bool(true));
    if !generated {
        out.insert(
            "id".into(),
            Value::String(string(map, "messageId", at)?.to_owned()),
        );
    }
    let parts_at = child(at, "parts");
    let parts = array(map.get("parts").unwrap_or(&Value::Null), &parts_at)?;
    match out.remove("content").as_ref().and_then(Value::as_str) {
        Some("absent") => {}
        Some("null") => {
            out.insert("content".into(), Value::Null);
        }
        Some("text") => {
            let text = parts
                .first()
                .and_then(|p| p.get("text"))
                .cloned()
                .unwrap_or(json!(""));
            out.insert("content".into(), text);
        }
        _ => {
            let decoded = parts
                .iter()
                .enumerate()
                .map(|(i, p)| part(p, &item(&parts_at, i)))
                .collect::<Result<Vec<_>, _>>()?;
            out.insert(
                "content".into(),
                serde_json::to_value(decoded).unwrap_or(Value::Null),
            );
        }
    }
    let mut native: Map<String, Value> = map
        .iter()
        .filter(|(k, _)| !["kind", "messageId", "role", "parts", "metadata"].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !metadata.is_empty() {
        native.insert("metadata".into(), Value::Object(metadata));
    }
    if !native.is_empty() {
        out.insert(namespace(ME), Value::Object(native));
    }
    chorus_value(Value::Object(out), at)
}

fn part(value: &Value, at: &str) -> Result<ContentPart, Problem> {
    let map = object(value, at)?;
    let (mut chorus, metadata) = split_metadata(map);
    let kind = chorus
        .remove("type")
        .and_then(|t| t.as_str().map(str::to_owned));
    let mut out = match string(map, "kind", at)? {
        "text" => {
            chorus.insert("text".into(), map.get("text").cloned().unwrap_or(json!("")));
            chorus.insert("type".into(), json!(kind.as_deref().unwrap_or("text")));
            chorus
        }
        "file" => {
            let file = object(map.get("file").unwrap_or(&Value::Null), &child(at, "file"))?;
            let mime = file.get("mimeType").and_then(Value::as_str);
            let bytes = file.get("bytes").and_then(Value::as_str);
            let uri = file.get("uri").and_then(Value::as_str);
            let kind = kind.unwrap_or_else(|| inferred_type(value).to_owned());
            let source = match (bytes, uri) {
                (Some(b), _) => format!(
                    "data:{};base64,{b}",
                    mime.unwrap_or("application/octet-stream")
                ),
                (None, Some(u)) => u.to_owned(),
                (None, None) => {
                    return Err(Problem::expected(
                        child(at, "file"),
                        "`bytes` or `uri`",
                        "neither",
                    ));
                }
            };
            match kind.as_str() {
                "image_url" => {
                    let inner = chorus.entry("image_url").or_insert_with(|| json!({}));
                    inner["url"] = Value::String(source);
                }
                "input_audio" => {
                    let inner = chorus.entry("input_audio").or_insert_with(|| json!({}));
                    inner["data"] = json!(bytes.unwrap_or_default());
                    if inner.get("format").is_none() {
                        inner["format"] =
                            json!(mime.and_then(|m| m.strip_prefix("audio/")).unwrap_or("wav"));
                    }
                }
                _ => {
                    let inner = chorus.entry("file").or_insert_with(|| json!({}));
                    let raw = inner.as_object_mut().and_then(|o| o.remove("raw_base64"))
                        == Some(Value::Bool(true));
                    match (bytes, raw) {
                        (Some(b), true) => inner["file_data"] = json!(b),
                        (Some(_), false) => inner["file_data"] = Value::String(source),
                        (None, _) => inner["url"] = Value::String(source),
                    }
                    if let Some(name) = file.get("name") {
                        inner["filename"] = name.clone();
                    }
                    if let (Some(m), true) = (mime, raw || bytes.is_none()) {
                        inner["mime_type"] = json!(m);
                    }
                }
            }
            chorus.insert("type".into(), Value::String(kind));
            chorus
        }
        "data" => {
            let data = map.get("data").cloned().unwrap_or(Value::Null);
            if kind.as_deref() == Some("other") {
                return match data {
                    Value::Object(other) => Ok(ContentPart::Other(other)),
                    other => Err(Problem::expected(
                        child(at, "data"),
                        "an object",
                        describe(&other),
                    )),
                };
            }
            chorus.insert("data".into(), data);
            chorus.insert("type".into(), json!("data"));
            chorus
        }
        other => {
            return Err(Problem::expected(
                child(at, "kind"),
                "text, file or data",
                format!("{other:?}"),
            ));
        }
    };
    if !metadata.is_empty() {
        out.insert(namespace(ME), json!({"metadata": metadata}));
    }
    chorus_value(Value::Object(out), at)
}
