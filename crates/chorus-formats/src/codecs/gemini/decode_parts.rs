//! Gemini parts → chorus parts: text, thought, inline_data and file_data; other parts are kept.

use chorus_core::{AudioPart, ContentPart, FilePart, FileRef, InputAudio, ReasoningPart, TextPart};
use serde_json::{Map, Value};

use super::spelling::{get, rest};
use crate::Format;
use crate::common::extras::{part_extra, stash};
use crate::common::json::{child, object, string};
use crate::common::media::image;
use crate::common::origin::marked;
use chorus_core::Problem;

const ME: Format = Format::Gemini;

/// A text, thought, inline_data or file_data part.
pub(super) fn media_or_text(value: &Value, at: &str) -> Result<ContentPart, Problem> {
    let map = object(value, at)?;
    if let Some(Value::String(text)) = map.get("text") {
        if map.get("thought") == Some(&Value::Bool(true)) {
            let mut part = ReasoningPart {
                text: text.clone(),
                ..ReasoningPart::default()
            };
            part.signature = get(map, "thought_signature")
                .and_then(|(v, _)| v.as_str())
                .map(str::to_owned);
            stash(
                &mut part.extra,
                ME,
                rest(map, &["text", "thought", "thought_signature"]),
            );
            return Ok(ContentPart::Reasoning(part));
        }
        let mut part = TextPart {
            text: text.clone(),
            ..TextPart::default()
        };
        stash(&mut part.extra, ME, rest(map, &["text"]));
        return Ok(ContentPart::Text(part));
    }
    if let Some((inline, key)) = get(map, "inline_data") {
        let in_at = child(at, &key);
        let inline = object(inline, &in_at)?;
        let mime = get(inline, "mime_type")
            .and_then(|(v, _)| v.as_str())
            .ok_or_else(|| {
                Problem::expected(child(&in_at, "mime_type"), "a media type", "nothing")
            })?;
        let data = string(inline, "data", &in_at)?;
        let part_rest = rest(map, &["inline_data"]);
        let mut part = if let Some(format) = mime.strip_prefix("audio/") {
            ContentPart::Audio(AudioPart {
                input_audio: InputAudio {
                    data: data.into(),
                    format: format.into(),
                    sample_rate: None,
                    extra: Map::new(),
                },
                extra: Map::new(),
            })
        } else if mime.starts_with("image/") {
            ContentPart::Image(image(format!("data:{mime};base64,{data}")))
        } else {
            ContentPart::File(FilePart {
                file: FileRef {
                    file_data: Some(format!("data:{mime};base64,{data}")),
                    ..FileRef::default()
                },
                extra: Map::new(),
            })
        };
        stash(part_extra(&mut part), ME, part_rest);
        return Ok(part);
    }
    if let Some((file, key)) = get(map, "file_data") {
        let f_at = child(at, &key);
        let file = object(file, &f_at)?;
        let uri = get(file, "file_uri")
            .and_then(|(v, _)| v.as_str())
            .ok_or_else(|| Problem::expected(child(&f_at, "file_uri"), "a file URI", "nothing"))?;
        let mime = get(file, "mime_type")
            .and_then(|(v, _)| v.as_str())
            .map(str::to_owned);
        let mut part = match &mime {
            Some(m) if m.starts_with("image/") => {
                let mut img = image(uri.into());
                stash(
                    &mut img.image_url.extra,
                    ME,
                    Map::from_iter([("mime_type".to_owned(), Value::String(m.clone()))]),
                );
                ContentPart::Image(img)
            }
            _ => ContentPart::File(FilePart {
                file: FileRef {
                    url: Some(uri.into()),
                    mime_type: mime,
                    ..FileRef::default()
                },
                extra: Map::new(),
            }),
        };
        stash(part_extra(&mut part), ME, rest(map, &["file_data"]));
        return Ok(part);
    }
    let mut other = marked(map, ME);
    if !other.contains_key("type") {
        other.insert("type".into(), Value::String("gemini_part".into()));
    }
    Ok(ContentPart::Other(other))
}
