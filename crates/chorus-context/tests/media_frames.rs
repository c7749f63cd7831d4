//! `chorus media frames` logic on a tiny video that ffmpeg itself generates (testsrc + sine).
//! Without ffmpeg the test says so and returns, unless CHORUS_TEST_REQUIRE_FFMPEG is set.

use std::path::{Path, PathBuf};
use std::process::Command;

use chorus_context::TokenCounter;
use chorus_context::prepare::{Ffmpeg, FrameRequest, PrepareError, Sampling, video_frames};
use chorus_core::{ContentPart, Detail};

fn ffmpeg_available() -> bool {
    let ok = Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CHORUS_TEST_REQUIRE_FFMPEG").is_none(),
            "ffmpeg is required but missing"
        );
        eprintln!("ffmpeg not installed: media frame extraction was not tested");
    }
    ok
}

/// A 4-second 160x120 video at 10 fps with a 440 Hz tone.
fn tiny_video(dir: &Path) -> PathBuf {
    let path = dir.join("clip.mkv");
    let status = Command::new("ffmpeg")
        .args([
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=duration=4:size=160x120:rate=10",
        ])
        .args([
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=440:duration=4",
            "-shortest",
        ])
        .args(["-c:v", "mjpeg", "-c:a", "pcm_s16le"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
    path
}

fn request(video: PathBuf, sampling: Sampling) -> FrameRequest {
    FrameRequest {
        video,
        start: 1.0,
        end: Some(3.0),
        sampling,
        detail: Detail::High,
        audio: true,
        out_dir: None,
        ffmpeg: Ffmpeg::default(),
    }
}

#[test]
fn frames_and_audio_of_a_range_become_one_message() {
    if !ffmpeg_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = tiny_video(dir.path());
    let message = video_frames(&request(video.clone(), Sampling::Count(5))).unwrap();
    let parts = message.parts();
    assert_eq!(parts.len(), 6);
    let stamps: Vec<f64> = parts[..5]
        .iter()
        .map(|p| match p {
            ContentPart::Image(i) => i
                .video_metadata
                .as_ref()
                .unwrap()
                .timestamp_sec
                .as_ref()
                .unwrap()
                .as_f64()
                .unwrap(),
            other => panic!("expected a frame, found {other:?}"),
        })
        .collect();
    assert_eq!(stamps, [1.0, 1.5, 2.0, 2.5, 3.0]);
    let ContentPart::Image(first) = &parts[0] else {
        unreachable!()
    };
    let meta = first.video_metadata.as_ref().unwrap();
    assert_eq!(meta.video_id.as_deref(), Some("clip"));
    assert_eq!(meta.frame_index, Some(10));
    // Frames are real 160x120 JPEGs (one 512-px tile each: 85 + 170); audio is 2 s of WAV.
    let b = TokenCounter::for_model("gpt-4o")
        .unwrap()
        .count_message(&message, 0)
        .unwrap();
    assert_eq!(b.images, 5 * 255);
    assert_eq!(b.audio, 20);
}

#[test]
fn frames_can_be_written_to_a_directory() {
    if !ffmpeg_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let video = tiny_video(dir.path());
    let mut req = request(video, Sampling::Fps(2.0));
    req.audio = false;
    req.out_dir = Some(dir.path().join("frames"));
    let message = video_frames(&req).unwrap();
    assert_eq!(message.parts().len(), 5); // 1.0, 1.5, 2.0, 2.5, 3.0
    let counter = TokenCounter::for_model("gpt-4o")
        .unwrap()
        .read_local_files(true);
    assert_eq!(counter.count_message(&message, 0).unwrap().images, 5 * 255);
}

#[test]
fn missing_ffmpeg_and_bad_ranges_are_clear_errors() {
    let mut req = request(PathBuf::from("nowhere.mp4"), Sampling::Count(2));
    req.ffmpeg = Ffmpeg {
        ffmpeg: "/nonexistent/ffmpeg".into(),
        ffprobe: "/nonexistent/ffprobe".into(),
    };
    let err = video_frames(&req).unwrap_err();
    assert!(matches!(err, PrepareError::Missing { .. }), "{err}");
    assert!(err.to_string().contains("apt-get install ffmpeg"));
    if !ffmpeg_available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut late = request(tiny_video(dir.path()), Sampling::Count(2));
    late.start = 9.0;
    late.end = None;
    assert!(
        video_frames(&late)
            .unwrap_err()
            .to_string()
            .contains("--start 9")
    );
}
