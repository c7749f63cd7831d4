//! Running `ffmpeg` and `ffprobe` as subprocesses, with clear errors when they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use thiserror::Error;

/// Why preparing media failed.
#[derive(Debug, Error)]
pub enum PrepareError {
    /// The program could not be started.
    #[error(
        "`{program}` was not found or cannot run ({reason}); hint: install ffmpeg (Debian: apt-get install ffmpeg) or pass its path"
    )]
    Missing {
        /// The program.
        program: String,
        /// The operating system's reason.
        reason: String,
    },
    /// The program ran and failed.
    #[error("{program} failed on {input} ({status}): {stderr}")]
    Failed {
        /// The program.
        program: String,
        /// The input file.
        input: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// The request or the video cannot give what was asked.
    #[error("{0}")]
    Request(String),
    /// Writing a frame file failed.
    #[error("{path}: cannot write: {reason}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Where `ffmpeg` and `ffprobe` are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ffmpeg {
    /// The `ffmpeg` program.
    pub ffmpeg: PathBuf,
    /// The `ffprobe` program.
    pub ffprobe: PathBuf,
}

impl Default for Ffmpeg {
    fn default() -> Self {
        Ffmpeg {
            ffmpeg: "ffmpeg".into(),
            ffprobe: "ffprobe".into(),
        }
    }
}

/// What `ffprobe` says about a video.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probe {
    /// Duration in seconds.
    pub duration: f64,
    /// Frames per second of the first video stream.
    pub fps: f64,
    /// Whether there is an audio stream.
    pub has_audio: bool,
}

impl Ffmpeg {
    fn run(&self, program: &Path, args: &[&str], input: &Path) -> Result<Vec<u8>, PrepareError> {
        let output =
            Command::new(program)
                .args(args)
                .output()
                .map_err(|e| PrepareError::Missing {
                    program: program.display().to_string(),
                    reason: e.to_string(),
                })?;
        if !output.status.success() {
            return Err(PrepareError::Failed {
                program: program.display().to_string(),
                input: input.display().to_string(),
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(output.stdout)
    }

    /// Duration, frame rate and audio presence of `video`.
    pub fn probe(&self, video: &Path) -> Result<Probe, PrepareError> {
        let path = video.to_string_lossy();
        let out = self.run(
            &self.ffprobe,
            &[
                "-v",
                "error",
                "-show_entries",
                "format=duration:stream=codec_type,avg_frame_rate",
                "-of",
                "json",
                &path,
            ],
            video,
        )?;
        let json: Value = serde_json::from_slice(&out)
            .map_err(|e| PrepareError::Request(format!("{path}: ffprobe printed no JSON ({e})")))?;
        let duration = json["format"]["duration"]
            .as_str()
            .and_then(|d| d.parse::<f64>().ok())
            .ok_or_else(|| {
                PrepareError::Request(format!("{path}: expected a video with a known duration"))
            })?;
        let streams = json["streams"].as_array().cloned().unwrap_or_default();
        let video_stream = streams
            .iter()
            .find(|s| s["codec_type"] == "video")
            .ok_or_else(|| {
                PrepareError::Request(format!("{path}: expected a video stream; found none"))
            })?;
        let fps = video_stream["avg_frame_rate"]
            .as_str()
            .and_then(parse_rate)
            .unwrap_or(0.0);
        let has_audio = streams.iter().any(|s| s["codec_type"] == "audio");
        Ok(Probe {
            duration,
            fps,
            has_audio,
        })
    }

    /// One JPEG frame of `video` at `seconds`.
    pub fn frame_jpeg(&self, video: &Path, seconds: f64) -> Result<Vec<u8>, PrepareError> {
        let at = format!("{seconds:.3}");
        let path = video.to_string_lossy();
        let bytes = self.run(
            &self.ffmpeg,
            &[
                "-v",
                "error",
                "-ss",
                &at,
                "-i",
                &path,
                "-frames:v",
                "1",
                "-f",
                "image2pipe",
                "-c:v",
                "mjpeg",
                "-",
            ],
            video,
        )?;
        if bytes.is_empty() {
            return Err(PrepareError::Request(format!("{path}: no frame at {at} s")));
        }
        Ok(bytes)
    }

    /// The audio of `video` from `start` to `end` seconds as 16 kHz mono WAV.
    pub fn audio_wav(&self, video: &Path, start: f64, end: f64) -> Result<Vec<u8>, PrepareError> {
        let (from, to) = (format!("{start:.3}"), format!("{end:.3}"));
        let path = video.to_string_lossy();
        self.run(
            &self.ffmpeg,
            &[
                "-v", "error", "-ss", &from, "-to", &to, "-i", &path, "-vn", "-ac", "1", "-ar",
                "16000", "-f", "wav", "-",
            ],
            video,
        )
    }
}

fn parse_rate(text: &str) -> Option<f64> {
    let (num, den) = text.split_once('/').unwrap_or((text, "1"));
    let (num, den) = (num.parse::<f64>().ok()?, den.parse::<f64>().ok()?);
    (den > 0.0).then(|| num / den)
}
