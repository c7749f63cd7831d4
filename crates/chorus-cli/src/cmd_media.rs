//! `chorus media frames`: a video's frames (and audio) as one user message, via ffmpeg.

use std::path::PathBuf;

use chorus_context::prepare::{Ffmpeg, FrameRequest, PrepareError, Sampling, video_frames};
use chorus_core::Detail;
use clap::{Args, Subcommand, ValueEnum};

use crate::error::CliError;

/// Arguments of `chorus media`.
#[derive(Debug, Args)]
pub struct MediaArgs {
    #[command(subcommand)]
    command: MediaCommand,
}

#[derive(Debug, Subcommand)]
enum MediaCommand {
    /// Print a user message of video frames with video_metadata (and the audio track).
    Frames(FramesArgs),
}

/// `--detail` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum DetailArg {
    Low,
    High,
    Auto,
}

#[derive(Debug, Args)]
struct FramesArgs {
    /// The video file.
    video: PathBuf,
    /// Start of the range, in seconds.
    #[arg(long, default_value_t = 0.0)]
    start: f64,
    /// End of the range, in seconds (default: the end of the video).
    #[arg(long)]
    end: Option<f64>,
    /// Frames per second to take.
    #[arg(long, conflicts_with = "count")]
    fps: Option<f64>,
    /// Number of frames, spread evenly over the range (default 5).
    #[arg(long)]
    count: Option<usize>,
    /// The detail of every frame.
    #[arg(long, value_enum, default_value_t = DetailArg::Auto)]
    detail: DetailArg,
    /// Add the range's audio as an input_audio part.
    #[arg(long)]
    audio: bool,
    /// Write frames to this directory and reference them by file:// URL.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Runs `chorus media`.
pub fn run(args: MediaArgs) -> Result<(), CliError> {
    let MediaCommand::Frames(args) = args.command;
    if !args.video.is_file() {
        return Err(CliError::usage(format!(
            "{}: cannot read: no such file",
            args.video.display()
        )));
    }
    let request = FrameRequest {
        video: args.video,
        start: args.start,
        end: args.end,
        sampling: match args.fps {
            Some(fps) => Sampling::Fps(fps),
            None => Sampling::Count(args.count.unwrap_or(5)),
        },
        detail: match args.detail {
            DetailArg::Low => Detail::Low,
            DetailArg::High => Detail::High,
            DetailArg::Auto => Detail::Auto,
        },
        audio: args.audio,
        out_dir: args.out,
        ffmpeg: Ffmpeg::default(),
    };
    let message = video_frames(&request).map_err(|e| match e {
        PrepareError::Failed { .. } | PrepareError::Request(_) => CliError::rejected(e),
        e => CliError::usage(e),
    })?;
    outln!(
        "{}",
        serde_json::to_string_pretty(&message).unwrap_or_default()
    );
    Ok(())
}
