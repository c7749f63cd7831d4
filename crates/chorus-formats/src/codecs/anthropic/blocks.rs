//! chorus content parts → Anthropic content blocks (text with citations, thinking, image, document).

use chorus_core::media::DataUrl;
use chorus_core::{CitationMap, ContentPart, Role};
use serde_json::{Map, Value, json};

use super::citations::unanchor;
use crate::Format;
use crate::common::extras::{drop_all, for_target};
use crate::common::json::{child, item};
use crate::common::media::{data_as_text, image_url};
use crate::common::origin::{is_from, unmarked};
use crate::loss::{Losses, Policy};

const ME: Format = Format::Anthropic;

/// A text block; trailing anchors of Anthropic citations become its `citations`.
pub(super) fn text_block(
    text: &str,
    citations: Option<&CitationMap>,
    extra: Map<String, Value>,
) -> Value {
    let (plain, cited) = unanchor(text, citations);
    let mut block = json!({"type": "text", "text": plain});
    if !cited.is_empty() {
        block["citations"] = Value::Array(cited);
    }
    if let Value::Object(map) = &mut block {
        map.extend(extra);
    }
    block
}

/// The blocks of a part list; what Anthropic cannot carry is reported.
pub(super) fn blocks(
    parts: &[ContentPart],
    role: Role,
    citations: Option<&CitationMap>,
    pointer: &str,
    losses: &mut Losses,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let at = item(pointer, i);
        let block = match part {
            ContentPart::Text(t) => {
                if t.index.is_some() {
                    losses.push(
                        child(&at, "index"),
                        Policy::Dropped,
                        "Anthropic blocks have no `index`",
                    );
                }
                text_block(&t.text, citations, for_target(&t.extra, ME, &at, losses))
            }
            ContentPart::Reasoning(r) if role == Role::Assistant => {
                let Some(signature) = &r.signature else {
                    losses.push(
                        at,
                        Policy::Dropped,
                        "Anthropic takes back only thinking it signed (a thinking block needs its signature)",
                    );
                    continue;
                };
                let block = json!({"type": "thinking", "thinking": r.text, "signature": signature});
                with(block, for_target(&r.extra, ME, &at, losses))
            }
            ContentPart::Image(img) => {
                let url = image_url(img, &at, false, losses);
                drop_all(
                    &img.image_url.extra,
                    &child(&at, "image_url"),
                    "an Anthropic image source",
                    losses,
                );
                let source = match DataUrl::parse(&url) {
                    Some(data) => {
                        json!({"type": "base64", "media_type": data.media_type, "data": data.base64})
                    }
                    None => json!({"type": "url", "url": url}),
                };
                with(
                    json!({"type": "image", "source": source}),
                    for_target(&img.extra, ME, &at, losses),
                )
            }
            ContentPart::File(f) => with(
                document(&f.file, &at, losses),
                for_target(&f.extra, ME, &at, losses),
            ),
            ContentPart::Data(d) => json!({"type": "text", "text": data_as_text(d, &at, losses)}),
            ContentPart::Other(other) if is_from(other, ME) => Value::Object(unmarked(other)),
            other => {
                let why = match other {
                    ContentPart::Reasoning(_) => {
                        "Anthropic carries thinking only in assistant turns".to_owned()
                    }
                    ContentPart::Audio(_) => "Anthropic has no audio input".to_owned(),
                    _ => format!("Anthropic has no block for a `{}` part", other.type_name()),
                };
                losses.push(at, Policy::Dropped, why);
                continue;
            }
        };
        out.push(block);
    }
    out
}

fn document(file: &chorus_core::FileRef, at: &str, losses: &mut Losses) -> Value {
    let file_at = child(at, "file");
    let data_url = file.file_data.as_deref().and_then(DataUrl::parse);
    let source = if let Some(id) = &file.file_id {
        json!({"type": "file", "file_id": id})
    } else if let Some(data) = data_url {
        json!({"type": "base64", "media_type": data.media_type, "data": data.base64})
    } else if let Some(data) = &file.file_data {
        match file.mime_type.as_deref() {
            Some(text @ "text/plain") => json!({"type": "text", "media_type": text, "data": data}),
            media => {
                json!({"type": "base64", "media_type": media.unwrap_or("application/pdf"), "data": data})
            }
        }
    } else if let Some(url) = &file.url {
        json!({"type": "url", "url": url})
    } else {
        losses.push(&file_at, Policy::Dropped, "a file without id, data or URL");
        json!({"type": "text", "media_type": "text/plain", "data": ""})
    };
    let mut block = json!({"type": "document", "source": source});
    if let Some(name) = &file.filename {
        block["title"] = Value::String(name.clone());
    }
    let used = [
        file.file_id.is_some(),
        file.file_data.is_some(),
        file.url.is_some(),
    ];
    if used.iter().filter(|u| **u).count() > 1 {
        losses.push(
            &file_at,
            Policy::Dropped,
            "a document has one source; the others are not sent",
        );
    }
    let is_data_url = file
        .file_data
        .as_deref()
        .is_some_and(|d| DataUrl::parse(d).is_some());
    if is_data_url && file.mime_type.is_some() {
        losses.push(
            child(&file_at, "mime_type"),
            Policy::Dropped,
            "the data URL's media type is sent instead",
        );
    }
    let raw_base64 =
        file.file_data.is_some() && !is_data_url && file.mime_type.as_deref() != Some("text/plain");
    if raw_base64 && file.file_id.is_none() {
        losses.push(
            child(&file_at, "file_data"),
            Policy::Downgraded,
            "inline base64 comes back as a data URL",
        );
    }
    if file.url.is_some() && file.mime_type.is_some() && file.file_data.is_none() {
        losses.push(
            child(&file_at, "mime_type"),
            Policy::Dropped,
            "a URL document source has no media type",
        );
    }
    drop_all(
        &file.extra,
        &file_at,
        "an Anthropic document source",
        losses,
    );
    block
}

fn with(mut block: Value, extra: Map<String, Value>) -> Value {
    if let Value::Object(map) = &mut block {
        map.extend(extra);
    }
    block
}
