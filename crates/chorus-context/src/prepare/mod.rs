//! Media preparation (seed 000, gotcha 4: models take frames and audio, not video files): a video
//! becomes one user message of frames with `video_metadata`, plus its audio track, via `ffmpeg`.

mod ffmpeg;
mod frames;

pub use ffmpeg::{Ffmpeg, PrepareError, Probe};
pub use frames::{FrameRequest, Sampling, frame_times, video_frames};
