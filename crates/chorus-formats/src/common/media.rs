//! Media parts for targets that carry less than chorus: what to send and what is lost.

use chorus_core::{DataPart, ImagePart, ImageUrl};
use serde_json::Map;

use crate::common::json::child;
use crate::common::rotation::rotated_url;
use crate::loss::{Losses, Policy};

/// An image part holding only its URL, as decoders read one.
pub fn image(url: String) -> ImagePart {
    ImagePart {
        image_url: ImageUrl {
            url,
            detail: None,
            rotation: None,
            width: None,
            height: None,
            extra: Map::new(),
        },
        video_metadata: None,
        extra: Map::new(),
    }
}

/// The URL to send for an image part on a target without chorus' image extras; the fields it
/// cannot carry (detail unless `keeps_detail`, size hints, video metadata) are reported.
pub fn image_url(
    part: &ImagePart,
    pointer: &str,
    keeps_detail: bool,
    losses: &mut Losses,
) -> String {
    let inner = child(pointer, "image_url");
    if !keeps_detail && part.image_url.detail.is_some() {
        losses.push(
            child(&inner, "detail"),
            Policy::Dropped,
            "the target has no image detail setting",
        );
    }
    for (key, present) in [
        ("width", part.image_url.width.is_some()),
        ("height", part.image_url.height.is_some()),
    ] {
        if present {
            losses.push(
                child(&inner, key),
                Policy::Dropped,
                "the target has no image size hints",
            );
        }
    }
    if part.video_metadata.is_some() {
        losses.push(
            child(pointer, "video_metadata"),
            Policy::Dropped,
            "the target has no video frame metadata",
        );
    }
    rotated_url(&part.image_url, &inner, losses)
}

/// A data part written as text for targets without data parts (reported as a downgrade).
pub fn data_as_text(part: &DataPart, pointer: &str, losses: &mut Losses) -> String {
    losses.push(
        pointer,
        Policy::Downgraded,
        "data part written as JSON text",
    );
    let mut text = String::from("## Data");
    if let Some(kind) = &part.kind {
        text.push_str(": ");
        text.push_str(kind);
    }
    text.push('\n');
    text.push_str(&part.data.to_string());
    text
}
