//! Reads image sizes from image headers and audio durations from WAV headers; no pixel decoding.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chorus_core::media::DataUrl;
use chorus_core::{ImageUrl, InputAudio};

use super::table::Size;

/// Where an image's size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeSource {
    /// Read from the image's own header.
    Header,
    /// The part's `width` / `height` hints.
    Hint,
    /// The table's default for remote images.
    Default,
}

/// Base64 characters decoded first; enough for the headers of PNG, GIF, WebP and most JPEGs.
const HEADER_CHARS: usize = 64 * 1024;

/// Size of the image behind `url`, or `Err(reason)` when it carries bytes that are not an image.
///
/// `data:` URLs are read from their header; local paths (`file://` or a path without scheme) only
/// when `read_files` is set; otherwise the `width`/`height` hints; otherwise `None`.
pub fn image_size(url: &ImageUrl, read_files: bool) -> Result<Option<(Size, SizeSource)>, String> {
    if let Some(data) = DataUrl::parse(&url.url) {
        return header_size_base64(data.base64).map(|s| Some((s, SizeSource::Header)));
    }
    if read_files && let Some(path) = local_path(&url.url) {
        let size = imagesize::size(path).map_err(|e| format!("{path}: {e}"))?;
        return Ok(Some((to_size(size), SizeSource::Header)));
    }
    Ok(match (url.width, url.height) {
        (Some(width), Some(height)) => Some((Size { width, height }, SizeSource::Hint)),
        _ => None,
    })
}

fn local_path(url: &str) -> Option<&str> {
    if let Some(path) = url.strip_prefix("file://") {
        return Some(path);
    }
    (!url.contains("://") && !url.starts_with("data:")).then_some(url)
}

fn to_size(size: imagesize::ImageSize) -> Size {
    Size {
        width: size.width as u32,
        height: size.height as u32,
    }
}

/// Size from base64 image bytes: decodes a prefix first, everything when the header lies further.
fn header_size_base64(b64: &str) -> Result<Size, String> {
    let b64 = b64.trim();
    if b64.len() > HEADER_CHARS {
        let prefix = &b64[..HEADER_CHARS - HEADER_CHARS % 4];
        if let Ok(bytes) = STANDARD.decode(prefix)
            && let Ok(size) = imagesize::blob_size(&bytes)
        {
            return Ok(to_size(size));
        }
    }
    let bytes = STANDARD
        .decode(b64)
        .map_err(|e| format!("base64 that does not decode ({e})"))?;
    imagesize::blob_size(&bytes)
        .map(to_size)
        .map_err(|e| format!("bytes that are not a PNG, JPEG, WebP or GIF image ({e})"))
}

/// Duration in seconds of inline audio: from the WAV header, or from the byte length and
/// `sample_rate` for raw `pcm16`; other formats need a `duration_sec` hint in the part.
pub fn audio_seconds(audio: &InputAudio) -> Result<f64, String> {
    if let Some(hint) = audio.extra.get("duration_sec").and_then(|v| v.as_f64()) {
        return Ok(hint);
    }
    match audio.format.to_ascii_lowercase().as_str() {
        "wav" | "wave" => {
            let bytes = STANDARD
                .decode(audio.data.trim())
                .map_err(|e| format!("base64 that does not decode ({e})"))?;
            wav_seconds(&bytes)
        }
        "pcm16" | "pcm" => {
            let rate = audio.sample_rate.ok_or("raw pcm16 without `sample_rate`")?;
            let channels = audio
                .extra
                .get("channels")
                .and_then(|v| v.as_u64())
                .unwrap_or(1);
            let bytes = decoded_len(audio.data.trim());
            Ok(bytes as f64 / (f64::from(rate) * 2.0 * channels as f64))
        }
        other => Err(format!(
            "`{other}` audio, whose duration chorus cannot read without decoding"
        )),
    }
}

fn decoded_len(b64: &str) -> usize {
    let padding = b64.bytes().rev().take_while(|&b| b == b'=').count();
    (b64.len() / 4) * 3 - padding.min(2)
}

/// Duration of a RIFF/WAVE file: the `data` chunk size over the `fmt ` byte rate.
pub fn wav_seconds(bytes: &[u8]) -> Result<f64, String> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        return Err("bytes without a RIFF/WAVE header".into());
    }
    let mut pos = 12;
    let mut byte_rate = None;
    while pos + 8 <= bytes.len() {
        let id = &bytes[pos..pos + 4];
        let len = u32::from_le_bytes([
            bytes[pos + 4],
            bytes[pos + 5],
            bytes[pos + 6],
            bytes[pos + 7],
        ]) as usize;
        let body = pos + 8;
        if id == b"fmt " && body + 12 <= bytes.len() {
            let rate = u32::from_le_bytes([
                bytes[body + 8],
                bytes[body + 9],
                bytes[body + 10],
                bytes[body + 11],
            ]);
            byte_rate = Some(rate);
        }
        if id == b"data" {
            let rate = byte_rate
                .filter(|&r| r > 0)
                .ok_or("a WAV `data` chunk before a valid `fmt ` chunk")?;
            // Streams written with an unknown length carry 0 or 0xFFFFFFFF: use what is there.
            let available = bytes.len() - body;
            let len = if len == 0 || len == u32::MAX as usize {
                available
            } else {
                len.min(available)
            };
            return Ok(len as f64 / f64::from(rate));
        }
        pos = body + len + (len & 1);
    }
    Err("a WAV file without a `data` chunk".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(seconds: u32, rate: u32) -> Vec<u8> {
        let data_len = seconds * rate * 2;
        let mut v = b"RIFF".to_vec();
        v.extend((36 + data_len).to_le_bytes());
        v.extend(b"WAVEfmt ");
        v.extend(16u32.to_le_bytes());
        v.extend(1u16.to_le_bytes()); // PCM
        v.extend(1u16.to_le_bytes()); // mono
        v.extend(rate.to_le_bytes());
        v.extend((rate * 2).to_le_bytes());
        v.extend(2u16.to_le_bytes());
        v.extend(16u16.to_le_bytes());
        v.extend(b"data");
        v.extend(data_len.to_le_bytes());
        v.extend(vec![0u8; data_len as usize]);
        v
    }

    #[test]
    fn wav_duration_from_header() {
        assert_eq!(wav_seconds(&wav(3, 8000)).unwrap(), 3.0);
        assert!(wav_seconds(b"RIFF....WAVEjunk").is_err());
        assert!(wav_seconds(b"not a wav").is_err());
    }

    #[test]
    fn pcm_duration_from_length() {
        let audio = InputAudio {
            data: STANDARD.encode(vec![0u8; 32000]),
            format: "pcm16".into(),
            sample_rate: Some(16000),
            extra: Default::default(),
        };
        assert_eq!(audio_seconds(&audio).unwrap(), 1.0);
    }
}
