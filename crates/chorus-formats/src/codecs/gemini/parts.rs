//! chorus content parts → Gemini parts (text, thought, inline_data, file_data).

use chorus_core::media::DataUrl;
use chorus_core::{ContentPart, Role};
use serde_json::{Map, Value, json};

use crate::Format;
use crate::common::extras::{drop_all, merge_into, namespace};
use crate::common::json::child;
use crate::common::media::{data_as_text, image_url};
use crate::common::origin::{is_from, unmarked};
use crate::loss::{Losses, Policy};

const ME: Format = Format::Gemini;

/// One part as Gemini writes it; `None` when the target has no place for it (reported).
pub(super) fn part(part: &ContentPart, role: Role, at: &str, losses: &mut Losses) -> Option<Value> {
    let (value, extra) = match part {
        ContentPart::Text(t) => {
            if t.index.is_some() {
                losses.push(
                    child(at, "index"),
                    Policy::Dropped,
                    "Gemini parts have no `index`",
                );
            }
            (json!({"text": t.text}), &t.extra)
        }
        ContentPart::Reasoning(r) if role == Role::Assistant => {
            let mut v = json!({"text": r.text, "thought": true});
            if let Some(sig) = &r.signature {
                v["thought_signature"] = Value::String(sig.clone());
            }
            (v, &r.extra)
        }
        ContentPart::Image(img) => {
            let url = image_url(img, at, false, losses);
            let ns = img
                .image_url
                .extra
                .get(&namespace(ME))
                .and_then(|v| v.get("mime_type"))
                .and_then(Value::as_str);
            let rest: Map<String, Value> = img
                .image_url
                .extra
                .iter()
                .filter(|(k, _)| **k != namespace(ME))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            drop_all(&rest, &child(at, "image_url"), "a Gemini image", losses);
            let v = match DataUrl::parse(&url) {
                Some(data) => {
                    json!({"inline_data": {"mime_type": data.media_type, "data": data.base64}})
                }
                None => {
                    let mime = ns.map(str::to_owned).unwrap_or_else(|| {
                        losses.push(
                            format!("{}/image_url/url", at),
                            Policy::Downgraded,
                            "Gemini needs a media type for file_data; guessed from the URL",
                        );
                        guess_mime(&url)
                    });
                    json!({"file_data": {"mime_type": mime, "file_uri": url}})
                }
            };
            (v, &img.extra)
        }
        ContentPart::Audio(a) => {
            if a.input_audio.sample_rate.is_some() {
                losses.push(
                    format!("{}/input_audio/sample_rate", at),
                    Policy::Dropped,
                    "Gemini inline audio has no sample rate",
                );
            }
            drop_all(
                &a.input_audio.extra,
                &child(at, "input_audio"),
                "Gemini inline audio",
                losses,
            );
            (
                json!({"inline_data": {"mime_type": format!("audio/{}", a.input_audio.format), "data": a.input_audio.data}}),
                &a.extra,
            )
        }
        ContentPart::File(f) => {
            let file = &f.file;
            let file_at = child(at, "file");
            let v = if let Some(data) = file.file_data.as_deref().and_then(DataUrl::parse) {
                json!({"inline_data": {"mime_type": data.media_type, "data": data.base64}})
            } else if let Some(data) = &file.file_data {
                json!({"inline_data": {"mime_type": file.mime_type.clone().unwrap_or_else(|| "application/octet-stream".into()), "data": data}})
            } else if let Some(uri) = file.url.as_ref().or(file.file_id.as_ref()) {
                let mut fd = json!({"file_uri": uri});
                if let Some(mime) = &file.mime_type {
                    fd["mime_type"] = Value::String(mime.clone());
                }
                json!({"file_data": fd})
            } else {
                losses.push(&file_at, Policy::Dropped, "a file without data or URI");
                return None;
            };
            let data_url = file
                .file_data
                .as_deref()
                .is_some_and(|d| DataUrl::parse(d).is_some());
            for (key, lost) in [
                ("filename", file.filename.is_some()),
                (
                    "file_id",
                    file.file_id.is_some() && (file.url.is_some() || file.file_data.is_some()),
                ),
                (
                    "file_id",
                    file.file_id.is_some() && file.url.is_none() && file.file_data.is_none(),
                ),
                ("url", file.url.is_some() && file.file_data.is_some()),
                ("mime_type", file.mime_type.is_some() && data_url),
                ("file_data", file.file_data.is_some() && !data_url),
                (
                    "mime_type",
                    media_kind(file)
                        .is_some_and(|m| m.starts_with("image/") || m.starts_with("audio/")),
                ),
            ] {
                if lost {
                    losses.push(
                        child(&file_at, key),
                        Policy::Downgraded,
                        format!("Gemini parts do not keep the file's `{key}` as given"),
                    );
                }
            }
            drop_all(&file.extra, &file_at, "a Gemini file", losses);
            (v, &f.extra)
        }
        ContentPart::Data(d) => return Some(json!({"text": data_as_text(d, at, losses)})),
        ContentPart::Other(other) if is_from(other, ME) => {
            let mut v = unmarked(other);
            if v.get("type").and_then(Value::as_str) == Some("gemini_part") {
                v.remove("type");
            }
            return Some(Value::Object(v));
        }
        other => {
            let why = match other {
                ContentPart::Reasoning(_) => {
                    "Gemini carries thoughts only in model turns".to_owned()
                }
                _ => format!("Gemini has no part for a `{}` part", other.type_name()),
            };
            losses.push(at, Policy::Dropped, why);
            return None;
        }
    };
    let mut value = value;
    if let Value::Object(map) = &mut value {
        merge_into(map, extra, ME, at, losses);
    }
    Some(value)
}

/// The media type a file part is sent with, when known.
fn media_kind(file: &chorus_core::FileRef) -> Option<&str> {
    match file.file_data.as_deref().and_then(DataUrl::parse) {
        Some(data) => Some(data.media_type),
        None => file.mime_type.as_deref(),
    }
}

fn guess_mime(url: &str) -> String {
    let lower = url.to_ascii_lowercase();
    let ext = lower.rsplit('.').next().unwrap_or_default();
    match ext {
        "png" => "image/png",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "heic" => "image/heic",
        _ => "image/jpeg",
    }
    .into()
}
