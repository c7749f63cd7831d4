//! Media payloads of content parts: images, video frames, audio and files (seed 000, A.1.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// How much detail the model should see in an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// A fixed low-resolution view (85 tokens on OpenAI models).
    Low,
    /// Full resolution, billed by tiles or patches.
    High,
    /// Let the provider choose.
    Auto,
}

/// An image reference: http(s), `data:` URL or object-store URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageUrl {
    /// Where the image is: `https://…`, `data:image/png;base64,…`, `s3://…`.
    pub url: String,
    /// Requested level of detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Detail>,
    /// Rotation in degrees to apply before the model sees the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotation: Option<Number>,
    /// Width in pixels, a size hint for remote images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// Height in pixels, a size hint for remote images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Where a video frame comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VideoMetadata {
    /// Id of the source video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_id: Option<String>,
    /// Position of the frame in the video, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub timestamp_sec: Option<Number>,
    /// Index of the frame in the video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_index: Option<u64>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Audio given inline as base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InputAudio {
    /// Base64 of the audio bytes.
    pub data: String,
    /// Container or encoding, e.g. `wav`, `mp3`, `pcm16`.
    pub format: String,
    /// Samples per second, needed for raw PCM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_rate: Option<u32>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A file or document, by provider id, inline data or URL.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileRef {
    /// Provider-side file id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// Inline content: base64 or a `data:` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    /// Where the file can be fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// File name shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Media type, e.g. `application/pdf`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `data:` URL split into its media type and base64 payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataUrl<'a> {
    /// The media type, e.g. `image/png`.
    pub media_type: &'a str,
    /// The base64 payload.
    pub base64: &'a str,
}

impl<'a> DataUrl<'a> {
    /// Splits a base64 `data:` URL; `None` when `url` is not one.
    pub fn parse(url: &'a str) -> Option<Self> {
        let rest = url.strip_prefix("data:")?;
        let (header, payload) = rest.split_once(',')?;
        let media_type = header.strip_suffix(";base64")?;
        Some(DataUrl {
            media_type,
            base64: payload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_base64_data_urls_only() {
        let url = DataUrl::parse("data:image/png;base64,iVBORw0KGgo=").unwrap();
        assert_eq!(url.media_type, "image/png");
        assert_eq!(url.base64, "iVBORw0KGgo=");
        assert_eq!(DataUrl::parse("data:text/plain,hello"), None);
        assert_eq!(DataUrl::parse("https://example.com/a.png"), None);
    }
}
