//! Responses content parts ⇄ chorus parts: input_text / output_text, input_image, input_file,
//! input_audio; other part types are kept as they are.

use chorus_core::{AudioPart, ContentPart, FilePart, FileRef, InputAudio, Role, TextPart};
use serde_json::{Map, Value, json};

use crate::Format;
use crate::common::extras::{drop_all, merge_into, part_extra, stash};
use crate::common::json::{array, child, item, object, opt_string, string, typed, unknown_keys};
use crate::common::media::{data_as_text, image, image_url};
use crate::common::origin::{is_from, marked, unmarked};
use chorus_core::Problem;

use crate::loss::{Losses, Policy};

const ME: Format = Format::OpenAiResponses;

/// Content parts: input_text / output_text / input_image / input_file / input_audio.
pub fn decode(value: &Value, pointer: &str) -> Result<Vec<ContentPart>, Problem> {
    let mut out = Vec::new();
    for (i, p) in array(value, pointer)?.iter().enumerate() {
        let at = item(pointer, i);
        let map = object(p, &at)?;
        let (mut part, known): (ContentPart, &[&str]) = match string(map, "type", &at)? {
            // An output text's empty annotation list is the form the request type requires
            // (written back by the encoder), not content.
            "output_text" if map.get("annotations") == Some(&Value::Array(Vec::new())) => (
                ContentPart::Text(TextPart {
                    text: string(map, "text", &at)?.to_owned(),
                    ..TextPart::default()
                }),
                &["type", "text", "annotations"],
            ),
            "input_text" | "output_text" => (
                ContentPart::Text(TextPart {
                    text: string(map, "text", &at)?.to_owned(),
                    ..TextPart::default()
                }),
                &["type", "text"],
            ),
            "input_image" if map.get("image_url").is_some_and(Value::is_string) => {
                let mut part = image(string(map, "image_url", &at)?.to_owned());
                // `auto` is the default the encoder writes when a message image has none.
                part.image_url.detail = match map.get("detail") {
                    Some(d) if d != "auto" => {
                        Some(typed(d, &child(&at, "detail"), "low, high or auto")?)
                    }
                    _ => None,
                };
                (ContentPart::Image(part), &["type", "image_url", "detail"])
            }
            "input_file" => {
                let file = FileRef {
                    file_id: opt_string(map, "file_id", &at)?.map(str::to_owned),
                    file_data: opt_string(map, "file_data", &at)?.map(str::to_owned),
                    url: opt_string(map, "file_url", &at)?.map(str::to_owned),
                    filename: opt_string(map, "filename", &at)?.map(str::to_owned),
                    ..FileRef::default()
                };
                (
                    ContentPart::File(FilePart {
                        file,
                        extra: Map::new(),
                    }),
                    &["type", "file_id", "file_data", "file_url", "filename"],
                )
            }
            "input_audio" => {
                let input_audio: InputAudio = typed(
                    map.get("input_audio").unwrap_or(&Value::Null),
                    &child(&at, "input_audio"),
                    "{data, format}",
                )?;
                (
                    ContentPart::Audio(AudioPart {
                        input_audio,
                        extra: Map::new(),
                    }),
                    &["type", "input_audio"],
                )
            }
            _ => (ContentPart::Other(marked(map, ME)), &[]),
        };
        if !matches!(part, ContentPart::Other(_)) {
            stash(part_extra(&mut part), ME, unknown_keys(map, known));
        }
        out.push(part);
    }
    Ok(out)
}

/// chorus parts as Responses content parts (`input_text`/`output_text`, `input_image`, ...).
pub(super) fn encode(
    parts: &[ContentPart],
    role: Role,
    pointer: &str,
    losses: &mut Losses,
) -> Vec<Value> {
    let text_type = if role == Role::Assistant {
        "output_text"
    } else {
        "input_text"
    };
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        let at = item(pointer, i);
        let (value, extra) = match part {
            ContentPart::Text(t) => {
                if t.index.is_some() {
                    losses.push(
                        child(&at, "index"),
                        Policy::Dropped,
                        "Responses parts have no `index`",
                    );
                }
                (json!({"type": text_type, "text": t.text}), &t.extra)
            }
            ContentPart::Image(img) if role != Role::Assistant => {
                let url = image_url(img, &at, true, losses);
                let mut v = json!({"type": "input_image", "image_url": url});
                match img.image_url.detail {
                    Some(d) => v["detail"] = serde_json::to_value(d).unwrap_or(Value::Null),
                    // A message image needs its detail (the request type requires it).
                    None if role != Role::Tool => v["detail"] = json!("auto"),
                    None => {}
                }
                drop_all(
                    &img.image_url.extra,
                    &child(&at, "image_url"),
                    "a Responses input_image",
                    losses,
                );
                (v, &img.extra)
            }
            ContentPart::File(f) if role != Role::Assistant => {
                let mut v = json!({"type": "input_file"});
                for (key, value) in [
                    ("file_id", &f.file.file_id),
                    ("file_data", &f.file.file_data),
                    ("file_url", &f.file.url),
                    ("filename", &f.file.filename),
                ] {
                    if let Some(s) = value {
                        v[key] = Value::String(s.clone());
                    }
                }
                if f.file.mime_type.is_some() {
                    losses.push(
                        format!("{at}/file/mime_type"),
                        Policy::Dropped,
                        "Responses files have no media type field",
                    );
                }
                drop_all(
                    &f.file.extra,
                    &child(&at, "file"),
                    "a Responses input_file",
                    losses,
                );
                (v, &f.extra)
            }
            ContentPart::Data(d) => {
                out.push(json!({"type": text_type, "text": data_as_text(d, &at, losses)}));
                continue;
            }
            ContentPart::Other(other) if is_from(other, ME) => {
                out.push(Value::Object(unmarked(other)));
                continue;
            }
            other => {
                losses.push(
                    at,
                    Policy::Dropped,
                    format!("Responses has no `{}` part here", other.type_name()),
                );
                continue;
            }
        };
        let mut value = value;
        if let Value::Object(map) = &mut value {
            merge_into(map, extra, ME, &at, losses);
        }
        out.push(value);
    }
    out
}
