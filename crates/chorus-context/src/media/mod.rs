//! Media cost models: images (tiles, patches, crop units, resolution levels) and audio, priced
//! from a user-overridable table with sizes read from the media's own headers.

mod image_cost;
mod probe;
mod table;

use chorus_core::media::DataUrl;
use chorus_core::{AudioPart, FilePart, ImagePart, Problem};
use serde_json::{Map, Value};

use crate::error::{ContextError, Result};
pub use image_cost::{ImageRequest, Resolution, image_tokens};
pub use probe::{SizeSource, audio_seconds, image_size, wav_seconds};
pub use table::{CostTable, ImageModel, ModelRule, ResolutionLevels, Size};

/// The media prices of one model, resolved from a [`CostTable`].
#[derive(Debug, Clone, PartialEq)]
pub struct MediaPricer {
    model: String,
    image: ImageModel,
    audio_per_second: Option<f64>,
    video_fps: Option<f64>,
    remote_default: Size,
    read_files: bool,
}

impl MediaPricer {
    /// The prices `table` gives `model`.
    pub fn new(table: &CostTable, model: &str) -> Result<Self> {
        let rule = table.rule(model).ok_or_else(|| ContextError::CostTable {
            pointer: "/models".into(),
            message: format!("no rule matches model `{model}`; add one with prefix \"\""),
        })?;
        Ok(MediaPricer {
            model: model.to_owned(),
            image: table.image_models[&rule.image].clone(),
            audio_per_second: rule.audio_tokens_per_second,
            video_fps: rule.video_frames_per_second,
            remote_default: table.remote_image_default,
            read_files: false,
        })
    }

    /// Allows reading image headers from local files named by `file://` URLs or plain paths.
    pub fn read_local_files(mut self, yes: bool) -> Self {
        self.read_files = yes;
        self
    }

    /// Tokens of an image part at JSON pointer `pointer`.
    pub fn image(&self, part: &ImagePart, pointer: &str) -> Result<u64> {
        let size = image_size(&part.image_url, self.read_files).map_err(|found| {
            let at = format!("{pointer}/image_url/url");
            ContextError::Media(
                Problem::expected(at, "an image (PNG, JPEG, WebP or GIF)", found).with_hint(
                    "a `data:` URL must hold base64 image bytes, e.g. data:image/png;base64,…",
                ),
            )
        })?;
        let size = size.map_or(self.remote_default, |(size, _)| size);
        let request = ImageRequest {
            detail: part.image_url.detail,
            resolution: resolution(&part.extra),
            video_frame: part.video_metadata.is_some(),
        };
        Ok(image_tokens(&self.image, size.width, size.height, request))
    }

    /// Tokens of a whole video file at JSON pointer `pointer`, as (frames, audio): its frames
    /// (sampled at the model's rate, or the part's `fps`) at the video-frame price, and its audio
    /// track at the audio rate. `None` when the part is not a video or the model takes no video
    /// files.
    pub fn video(&self, part: &FilePart, pointer: &str) -> Result<Option<(u64, u64)>> {
        let Some(default_fps) = self.video_fps.filter(|_| is_video(part)) else {
            return Ok(None);
        };
        let number = |key: &str| {
            part.extra
                .get(key)
                .or_else(|| part.file.extra.get(key))
                .and_then(Value::as_f64)
        };
        let seconds = number("duration_sec").ok_or_else(|| {
            ContextError::Media(
                Problem::expected(
                    pointer,
                    "a video whose duration is given",
                    "a video file part without \"duration_sec\"",
                )
                .with_hint("add \"duration_sec\" (seconds) to the part or its file"),
            )
        })?;
        let fps = number("fps").unwrap_or(default_fps);
        let level = resolution(&part.extra).or_else(|| resolution(&part.file.extra));
        let request = ImageRequest {
            detail: None,
            resolution: level,
            video_frame: true,
        };
        let size = self.remote_default;
        let frame = image_tokens(&self.image, size.width, size.height, request) as f64;
        let audio = self.audio_per_second.unwrap_or(0.0);
        Ok(Some((
            (seconds * fps * frame).ceil() as u64,
            (seconds * audio).ceil() as u64,
        )))
    }

    /// Tokens of an audio part at JSON pointer `pointer`.
    pub fn audio(&self, part: &AudioPart, pointer: &str) -> Result<u64> {
        let rate = self.audio_per_second.ok_or_else(|| {
            ContextError::Media(
                Problem::expected(
                    pointer,
                    format!("audio input, which model `{}` does not take", self.model),
                    "an input_audio part",
                )
                .with_hint("transcribe the audio or choose an audio-capable model"),
            )
        })?;
        let seconds = audio_seconds(&part.input_audio).map_err(|found| {
            ContextError::Media(
                Problem::expected(
                    format!("{pointer}/input_audio"),
                    "audio whose duration can be read (wav, or pcm16 with sample_rate)",
                    found,
                )
                .with_hint("add \"duration_sec\" to input_audio for compressed formats"),
            )
        })?;
        Ok((seconds * rate).ceil() as u64)
    }
}

/// A Gemini `media_resolution` level named in `extra`.
fn resolution(extra: &Map<String, Value>) -> Option<Resolution> {
    extra
        .get("media_resolution")
        .and_then(Value::as_str)
        .and_then(Resolution::parse)
}

/// Whether a file part holds a video, by its media type or its `data:` URL's.
fn is_video(part: &FilePart) -> bool {
    let inline = part.file.file_data.as_deref().and_then(DataUrl::parse);
    part.file
        .mime_type
        .as_deref()
        .or(inline.map(|d| d.media_type))
        .is_some_and(|m| m.starts_with("video/"))
}
