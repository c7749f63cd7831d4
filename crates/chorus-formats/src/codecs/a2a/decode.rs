//! A2A `Message` objects (v1.0, or v0.3) → chorus; `metadata.chorus` restores what A2A has no
//! field for.

use chorus_core::{ContentPart, Conversation, Message};
use serde_json::{Map, Value, json};

use super::{CHORUS, FileView, ROLE_AGENT, ROLE_USER, Shape, inferred_type, part_shape};
use crate::Format;
use crate::common::extras::namespace;
use crate::common::json::{array, child, chorus_value, describe, item, object, string};
use chorus_core::Problem;

const ME: Format = Format::A2a;

/// Decodes one message, an array of them, a task (its `history`), or `{"messages": [...]}`.
pub fn conversation(value: &Value) -> Result<Conversation, Problem> {
    let (list, pointer): (&[Value], &str) = match value {
        Value::Array(list) => (list, ""),
        Value::Object(map) if is_task(map) => {
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

/// A task: v0.3 says `kind: task`; a v1.0 task has an `id` and a `status` but no `parts`.
fn is_task(map: &Map<String, Value>) -> bool {
    map.get("kind").and_then(Value::as_str) == Some("task")
        || (map.contains_key("status") && map.contains_key("id") && !map.contains_key("parts"))
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
        (None, ROLE_USER | "user") => json!("user"),
        (None, ROLE_AGENT | "agent") => json!("assistant"),
        (None, other) => {
            return Err(Problem::expected(
                child(at, "role"),
                "ROLE_USER or ROLE_AGENT (v0.3: user or agent)",
                format!("{other:?}"),
            )
            .with_hint("A2A v1.0 spells roles as ProtoJSON enum names"));
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
        Some("empty") => {
            out.insert("content".into(), json!([]));
        }
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
    let mut out = match part_shape(value) {
        Shape::Text => {
            chorus.insert("text".into(), map.get("text").cloned().unwrap_or(json!("")));
            chorus.insert("type".into(), json!(kind.as_deref().unwrap_or("text")));
            chorus
        }
        Shape::Data if kind.as_deref() == Some("file") && chorus.contains_key("file") => {
            // A file known only by a provider file id: the file travels in metadata.chorus.
            chorus.insert("type".into(), json!("file"));
            chorus
        }
        Shape::File => {
            if map.contains_key("kind") {
                object(map.get("file").unwrap_or(&Value::Null), &child(at, "file"))?;
            }
            let view = FileView::of(value);
            let (mime, bytes, uri) = (view.mime, view.bytes, view.uri);
            let kind = kind.unwrap_or_else(|| inferred_type(value).to_owned());
            let source = match (bytes, uri) {
                (Some(b), _) => format!(
                    "data:{};base64,{b}",
                    mime.unwrap_or("application/octet-stream")
                ),
                (None, Some(u)) => u.to_owned(),
                (None, None) if map.contains_key("kind") => {
                    return Err(Problem::expected(
                        child(at, "file"),
                        "`bytes` or `uri`",
                        "neither",
                    ));
                }
                (None, None) => {
                    let key = if map.contains_key("raw") {
                        "raw"
                    } else {
                        "url"
                    };
                    return Err(Problem::expected(
                        child(at, key),
                        "a string",
                        map.get(key).map_or_else(|| "nothing".into(), describe),
                    ));
                }
            };
            match kind.as_str() {
                "image_url" => {
                    let inner = object_at(&mut chorus, "image_url");
                    inner["url"] = Value::String(source);
                }
                "input_audio" => {
                    let inner = object_at(&mut chorus, "input_audio");
                    inner["data"] = json!(bytes.unwrap_or_default());
                    if inner.get("format").is_none() {
                        inner["format"] =
                            json!(mime.and_then(|m| m.strip_prefix("audio/")).unwrap_or("wav"));
                    }
                }
                _ => {
                    let inner = object_at(&mut chorus, "file");
                    let raw = inner.as_object_mut().and_then(|o| o.remove("raw_base64"))
                        == Some(Value::Bool(true));
                    match (bytes, raw) {
                        (Some(b), true) => inner["file_data"] = json!(b),
                        (Some(_), false) => inner["file_data"] = Value::String(source),
                        (None, _) => inner["url"] = Value::String(source),
                    }
                    if let Some(name) = view.name {
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
        Shape::Data => {
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
        Shape::Unknown => return Err(unknown_part(map, at)),
    };
    if !metadata.is_empty() {
        out.insert(namespace(ME), json!({"metadata": metadata}));
    }
    chorus_value(Value::Object(out), at)
}

/// The problem of a part that is none of text, file or data.
fn unknown_part(map: &Map<String, Value>, at: &str) -> Problem {
    match map.get("kind") {
        Some(kind) => Problem::expected(
            child(at, "kind"),
            "text, file or data (v0.3)",
            describe(kind),
        ),
        None => Problem::expected(
            at,
            "a part with one of `text`, `raw`, `url` or `data`",
            format!(
                "keys {}",
                map.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
        .with_hint("v0.3 parts say `kind`; v1.0 parts are a oneof of their content field"),
    }
}

/// The object under `key` in `map`, made an empty one when it is absent or not an object (a
/// sender's `metadata.chorus` may hold anything there; indexing a non-object would panic).
fn object_at<'a>(map: &'a mut serde_json::Map<String, Value>, key: &str) -> &'a mut Value {
    let inner = map.entry(key).or_insert_with(|| json!({}));
    if !inner.is_object() {
        *inner = json!({});
    }
    inner
}
