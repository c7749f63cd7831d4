//! chorus → A2A v1.0 `Message` objects (ProtoJSON: `ROLE_*` roles, parts as a oneof of `text`,
//! `raw`, `url`, `data`); chorus-only fields travel in `metadata.chorus`.

use chorus_core::media::DataUrl;
use chorus_core::{Content, ContentPart, Conversation, Message, Nullable, Role};
use serde_json::{Map, Value, json};

use super::{CHORUS, ROLE_AGENT, ROLE_USER, inferred_type};
use crate::Format;
use crate::common::extras::{drop_all, namespace};
use crate::common::json::{child, item};
use crate::common::rotation::rotated_url;
use crate::loss::Losses;

const ME: Format = Format::A2a;

/// Encodes a conversation as an array of A2A messages.
pub fn messages(conversation: &Conversation, losses: &mut Losses) -> Value {
    if conversation.tools.is_some() {
        losses.push(
            "/tools",
            crate::Policy::Dropped,
            "A2A messages do not carry tool definitions",
        );
    }
    drop_all(&conversation.extra, "", "an A2A message list", losses);
    let out = conversation
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(m, i, &item("/messages", i), losses))
        .collect();
    Value::Array(out)
}

fn message(m: &Message, index: usize, at: &str, losses: &mut Losses) -> Value {
    let mut chorus = match serde_json::to_value(m) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    for key in ["content", "id", "role"] {
        chorus.remove(key);
    }
    let mut native = match chorus.remove(&namespace(ME)) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let role = match m.role {
        Role::User => ROLE_USER,
        Role::Assistant => ROLE_AGENT,
        other => {
            chorus.insert("role".into(), Value::String(other.as_str().into()));
            if other == Role::Tool {
                ROLE_AGENT
            } else {
                ROLE_USER
            }
        }
    };
    let message_id = match &m.id {
        Some(id) => id.clone(),
        None => {
            chorus.insert("generated_id".into(), Value::Bool(true));
            format!("msg-{index}")
        }
    };
    let parts = match &m.content {
        Nullable::Absent => {
            chorus.insert("content".into(), json!("absent"));
            Vec::new()
        }
        Nullable::Null => {
            chorus.insert("content".into(), json!("null"));
            Vec::new()
        }
        Nullable::Value(Content::Text(text)) => {
            chorus.insert("content".into(), json!("text"));
            vec![json!({"text": text})]
        }
        Nullable::Value(Content::Parts(parts)) => parts
            .iter()
            .enumerate()
            .map(|(i, p)| part(p, &item(&child(at, "content"), i), losses))
            .collect(),
    };
    let parts = if parts.is_empty() {
        // v1.0 requires at least one part: an empty text stands in, and `metadata.chorus.content`
        // says the content was absent, null or an empty list.
        chorus.entry("content").or_insert_with(|| json!("empty"));
        vec![json!({"text": ""})]
    } else {
        parts
    };
    let mut out = Map::new();
    out.insert("messageId".into(), Value::String(message_id));
    out.insert("role".into(), json!(role));
    out.insert("parts".into(), Value::Array(parts));
    let mut metadata = match native.remove("metadata") {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    if !chorus.is_empty() {
        metadata.insert(CHORUS.into(), Value::Object(chorus));
    }
    if !metadata.is_empty() {
        out.insert("metadata".into(), Value::Object(metadata));
    }
    for (key, value) in native {
        out.entry(key).or_insert(value);
    }
    Value::Object(out)
}

/// One part; what A2A has no field for goes into the part's `metadata.chorus`.
fn part(part: &ContentPart, at: &str, losses: &mut Losses) -> Value {
    let mut rest = match serde_json::to_value(part) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let mut native = match rest.remove(&namespace(ME)) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let mut out = match part {
        ContentPart::Text(t) => {
            rest.remove("text");
            rest.remove("type");
            json!({"text": t.text})
        }
        ContentPart::Reasoning(r) => {
            rest.remove("text");
            json!({"text": r.text})
        }
        ContentPart::Image(img) => {
            let url = rotated_url(&img.image_url, &child(at, "image_url"), losses);
            if let Some(Value::Object(inner)) = rest.get_mut("image_url") {
                inner.remove("url");
                inner.remove("rotation");
                if inner.is_empty() {
                    rest.remove("image_url");
                }
            }
            image_file(&url)
        }
        ContentPart::Audio(a) => {
            if let Some(Value::Object(inner)) = rest.get_mut("input_audio") {
                inner.remove("data");
                inner.insert("format".into(), Value::String(a.input_audio.format.clone()));
            }
            let mime = format!("audio/{}", a.input_audio.format);
            json!({"raw": a.input_audio.data, "mediaType": mime})
        }
        ContentPart::File(f) => {
            let file = &f.file;
            let Some(Value::Object(inner)) = rest.get_mut("file") else {
                unreachable!("a file part has a file")
            };
            let mut out = Map::new();
            if let Some(data) = file.file_data.as_deref() {
                inner.remove("file_data");
                match DataUrl::parse(data) {
                    Some(d) => {
                        out.insert("raw".into(), Value::String(d.base64.into()));
                        out.insert("mediaType".into(), Value::String(d.media_type.into()));
                    }
                    None => {
                        inner.insert("raw_base64".into(), Value::Bool(true));
                        out.insert("raw".into(), Value::String(data.into()));
                        if let Some(mime) = inner.remove("mime_type") {
                            out.insert("mediaType".into(), mime);
                        }
                    }
                }
            } else if let Some(url) = inner.remove("url") {
                out.insert("url".into(), url);
                if let Some(mime) = inner.remove("mime_type") {
                    out.insert("mediaType".into(), mime);
                }
            } else {
                // A file known only by a provider's file id has no A2A content: the peer sees a
                // data part naming the id; chorus reads the file back from `metadata.chorus`.
                out.insert("data".into(), json!({"file_id": file.file_id}));
            }
            if let Some(name) = inner.remove("filename") {
                out.insert("filename".into(), name);
            }
            if inner.is_empty() {
                rest.remove("file");
            }
            Value::Object(out)
        }
        ContentPart::Data(d) => {
            rest.remove("data");
            json!({"data": d.data})
        }
        ContentPart::Other(map) => {
            rest = Map::new();
            json!({"data": map})
        }
    };
    let kind = match part {
        ContentPart::Other(_) => "other",
        known => known.type_name(),
    };
    if kind != inferred_type(&out) {
        rest.insert("type".into(), Value::String(kind.into()));
    } else {
        rest.remove("type");
    }
    let mut metadata = match native.remove("metadata") {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    if !rest.is_empty() {
        metadata.insert(CHORUS.into(), Value::Object(rest));
    }
    if !metadata.is_empty() {
        out["metadata"] = Value::Object(metadata);
    }
    out
}

/// An A2A part for an image URL: inline `raw` bytes for data URLs, a `url` otherwise.
fn image_file(url: &str) -> Value {
    match DataUrl::parse(url) {
        Some(data) => json!({"raw": data.base64, "mediaType": data.media_type}),
        None => json!({"url": url}),
    }
}
