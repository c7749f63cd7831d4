//! Frames and audio of a time range of a video, as one user message.

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chorus_core::{
    AudioPart, ContentPart, Detail, ImagePart, ImageUrl, InputAudio, Message, Role, VideoMetadata,
};
use serde_json::{Map, Number};

use super::ffmpeg::{Ffmpeg, PrepareError};

/// How frames are picked in the range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// This many frames per second, from the start.
    Fps(f64),
    /// This many frames spread evenly from the start to the end, both included.
    Count(usize),
}

/// What `chorus media frames` asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameRequest {
    /// The video file.
    pub video: PathBuf,
    /// Start of the range in seconds.
    pub start: f64,
    /// End of the range; the video's end when absent.
    pub end: Option<f64>,
    /// Frame picking.
    pub sampling: Sampling,
    /// The `detail` of every frame.
    pub detail: Detail,
    /// Whether to add the range's audio as an `input_audio` part.
    pub audio: bool,
    /// Write frames here and reference them by `file://` URL instead of inlining them.
    pub out_dir: Option<PathBuf>,
    /// The programs to run.
    pub ffmpeg: Ffmpeg,
}

/// Timestamps of the frames to take from `start` to `end`.
pub fn frame_times(start: f64, end: f64, sampling: Sampling) -> Vec<f64> {
    match sampling {
        Sampling::Count(0) => Vec::new(),
        Sampling::Count(1) => vec![start],
        Sampling::Count(n) => (0..n)
            .map(|i| start + (end - start) * i as f64 / (n - 1) as f64)
            .collect(),
        Sampling::Fps(fps) if fps > 0.0 => {
            let n = ((end - start) * fps).floor() as usize + 1;
            (0..n)
                .map(|i| start + i as f64 / fps)
                .filter(|t| *t <= end)
                .collect()
        }
        Sampling::Fps(_) => Vec::new(),
    }
}

/// The user message of frames (with `video_metadata`) and, when asked, the audio track.
pub fn video_frames(request: &FrameRequest) -> Result<Message, PrepareError> {
    let probe = request.ffmpeg.probe(&request.video)?;
    let end = request.end.unwrap_or(probe.duration).min(probe.duration);
    if !(request.start >= 0.0 && request.start < end) {
        return Err(PrepareError::Request(format!(
            "--start {} must be at least 0 and before the end ({end:.3} s; the video lasts {:.3} s)",
            request.start, probe.duration
        )));
    }
    let video_id = request
        .video
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "video".into());
    // The video's last decodable frame starts one frame before its end.
    let last_frame = if probe.fps > 0.0 {
        probe.duration - 1.0 / probe.fps
    } else {
        probe.duration
    };
    let last = end.min(last_frame).max(request.start);
    let times = frame_times(request.start, last, request.sampling);
    if times.is_empty() {
        return Err(PrepareError::Request(
            "the sampling selects no frames; use --fps above 0 or --count above 0".into(),
        ));
    }
    let mut parts = Vec::with_capacity(times.len() + 1);
    for (i, &t) in times.iter().enumerate() {
        let jpeg = request.ffmpeg.frame_jpeg(&request.video, t)?;
        let url = match &request.out_dir {
            Some(dir) => write_frame(dir, &video_id, i, &jpeg)?,
            None => format!("data:image/jpeg;base64,{}", STANDARD.encode(&jpeg)),
        };
        let metadata = VideoMetadata {
            video_id: Some(video_id.clone()),
            timestamp_sec: Number::from_f64((t * 1000.0).round() / 1000.0),
            frame_index: Some((t * probe.fps).round() as u64),
            extra: Map::new(),
        };
        parts.push(ContentPart::Image(ImagePart {
            image_url: ImageUrl {
                url,
                detail: Some(request.detail),
                rotation: None,
                width: None,
                height: None,
                extra: Map::new(),
            },
            video_metadata: Some(metadata),
            extra: Map::new(),
        }));
    }
    if request.audio {
        if !probe.has_audio {
            return Err(PrepareError::Request(format!(
                "{}: --audio asked, but the video has no audio stream",
                request.video.display()
            )));
        }
        let wav = request
            .ffmpeg
            .audio_wav(&request.video, request.start, end)?;
        parts.push(ContentPart::Audio(AudioPart {
            input_audio: InputAudio {
                data: STANDARD.encode(&wav),
                format: "wav".into(),
                sample_rate: Some(16000),
                extra: Map::new(),
            },
            extra: Map::new(),
        }));
    }
    Ok(Message::with_parts(Role::User, parts))
}

fn write_frame(
    dir: &Path,
    video_id: &str,
    index: usize,
    jpeg: &[u8],
) -> Result<String, PrepareError> {
    let path = dir.join(format!("{video_id}_frame_{index:04}.jpg"));
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&path, jpeg))
        .map_err(|e| PrepareError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    let absolute = std::path::absolute(&path).unwrap_or(path);
    Ok(format!("file://{}", absolute.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_key_frames_from_ten_to_fifteen_seconds() {
        // Seed 000, exercise 1.
        assert_eq!(
            frame_times(10.0, 15.0, Sampling::Count(5)),
            [10.0, 11.25, 12.5, 13.75, 15.0]
        );
        assert_eq!(
            frame_times(10.0, 12.0, Sampling::Fps(1.0)),
            [10.0, 11.0, 12.0]
        );
        assert_eq!(frame_times(0.0, 1.0, Sampling::Fps(0.0)), Vec::<f64>::new());
        assert_eq!(frame_times(2.0, 3.0, Sampling::Count(1)), [2.0]);
    }
}
