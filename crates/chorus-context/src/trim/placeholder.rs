//! Replacing media with short text placeholders that say what was removed.

use chorus_core::{Content, ContentPart, Message, Nullable};
use serde::Serialize;

use crate::count::TokenCounter;
use crate::error::Result;

/// One media part replaced by a placeholder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Replacement {
    /// Index of the message in the input.
    pub message: usize,
    /// Index of the part in the message's content.
    pub part: usize,
    /// The placeholder text now in its place.
    pub placeholder: String,
    /// Tokens the media cost.
    pub media_tokens: usize,
}

/// The message with every image and audio part replaced by a text placeholder, and what was
/// replaced; `index` is the message's position, for reports and error pointers.
pub fn strip_media(
    message: &Message,
    counter: &TokenCounter,
    index: usize,
) -> Result<(Message, Vec<Replacement>)> {
    let Some(Content::Parts(parts)) = message.content() else {
        return Ok((message.clone(), Vec::new()));
    };
    let mut replaced = Vec::new();
    let mut out = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        let text = match part {
            ContentPart::Image(image) => {
                let tokens = counter.count_part(part, &format!("/messages/{index}/content/{i}"))?;
                Some((describe_image(image, tokens), tokens))
            }
            ContentPart::Audio(audio) => {
                let tokens = counter.count_part(part, &format!("/messages/{index}/content/{i}"))?;
                Some((
                    format!(
                        "[{} audio removed to save context: {tokens} tokens]",
                        audio.input_audio.format
                    ),
                    tokens,
                ))
            }
            _ => None,
        };
        match text {
            Some((placeholder, media_tokens)) => {
                out.push(ContentPart::text(placeholder.clone()));
                replaced.push(Replacement {
                    message: index,
                    part: i,
                    placeholder,
                    media_tokens,
                });
            }
            None => out.push(part.clone()),
        }
    }
    let mut stripped = message.clone();
    stripped.content = Nullable::Value(Content::Parts(out));
    Ok((stripped, replaced))
}

fn describe_image(image: &chorus_core::ImagePart, tokens: usize) -> String {
    match &image.video_metadata {
        Some(frame) => {
            let video = frame.video_id.as_deref().unwrap_or("video");
            let at = frame
                .timestamp_sec
                .as_ref()
                .map(|t| format!(" at {t} s"))
                .unwrap_or_default();
            format!("[frame of {video}{at} removed to save context: {tokens} tokens]")
        }
        None => format!("[image removed to save context: {tokens} tokens]"),
    }
}
