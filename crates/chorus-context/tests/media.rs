//! Published image and audio examples reproduced from real headers built here, in messages.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::sync::Arc;

use chorus_context::media::{CostTable, MediaPricer};
use chorus_context::{BpeEncoding, ContextError, TokenCounter};
use chorus_core::{ContentPart, Message, Role};
use serde_json::json;

fn png(w: u32, h: u32) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend(13u32.to_be_bytes());
    v.extend(b"IHDR");
    v.extend(w.to_be_bytes());
    v.extend(h.to_be_bytes());
    v.extend([8, 2, 0, 0, 0]);
    v.extend([0, 0, 0, 0]); // CRC (not checked by header readers)
    v
}

fn jpeg(w: u16, h: u16) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10];
    v.extend(b"JFIF\0");
    v.extend([1, 1, 0, 0, 1, 0, 1, 0, 0]);
    v.extend([0xFF, 0xC0, 0x00, 0x11, 0x08]);
    v.extend(h.to_be_bytes());
    v.extend(w.to_be_bytes());
    v.extend([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
    v.extend([0xFF, 0xD9]);
    v
}

fn webp(w: u32, h: u32) -> Vec<u8> {
    let mut v = b"RIFF".to_vec();
    v.extend(22u32.to_le_bytes());
    v.extend(b"WEBPVP8X");
    v.extend(10u32.to_le_bytes());
    v.extend([0, 0, 0, 0]);
    v.extend(&(w - 1).to_le_bytes()[..3]);
    v.extend(&(h - 1).to_le_bytes()[..3]);
    v
}

fn gif(w: u16, h: u16) -> Vec<u8> {
    let mut v = b"GIF89a".to_vec();
    v.extend(w.to_le_bytes());
    v.extend(h.to_le_bytes());
    v.extend([0, 0, 0, 0x3B]);
    v
}

fn image_part(mime: &str, bytes: &[u8], detail: &str) -> ContentPart {
    serde_json::from_value(json!({
        "type": "image_url",
        "image_url": {"url": format!("data:{mime};base64,{}", STANDARD.encode(bytes)), "detail": detail}
    }))
    .unwrap()
}

fn image_cost(model: &str, part: &ContentPart) -> u64 {
    let ContentPart::Image(image) = part else {
        panic!("not an image")
    };
    MediaPricer::new(&CostTable::default(), model)
        .unwrap()
        .image(image, "/p")
        .unwrap()
}

#[test]
fn gpt4o_high_1024_square_png_is_765_in_a_message() {
    let message = Message::with_parts(
        Role::User,
        vec![
            ContentPart::text("What is this?"),
            image_part("image/png", &png(1024, 1024), "high"),
        ],
    );
    let counter = TokenCounter::for_model("gpt-4o").unwrap();
    let b = counter.count_message(&message, 0).unwrap();
    assert_eq!(b.images, 765);
    assert_eq!(b.text, counter.count_text("What is this?"));
}

#[test]
fn remote_images_use_hints_then_the_documented_default() {
    let hinted: ContentPart = serde_json::from_value(json!({
        "type": "image_url",
        "image_url": {"url": "https://example.com/a.jpg", "detail": "high", "width": 2048, "height": 4096}
    }))
    .unwrap();
    assert_eq!(image_cost("gpt-4o", &hinted), 1105);
    let bare: ContentPart = serde_json::from_value(json!({
        "type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}
    }))
    .unwrap();
    assert_eq!(image_cost("gpt-4o", &bare), 765); // default 1024x1024
}

#[test]
fn a_user_table_overrides_prices() {
    let table = CostTable::with_overlay(
        r#"{"image_models":{"cheap":{"kind":"openai_tiles","base":1,"tile":2,"max_side":2048,"short_side":768,"tile_size":512}},
            "models":[{"prefix":"gpt-4o","image":"cheap"}]}"#,
    )
    .unwrap();
    let counter = TokenCounter::with_table("gpt-4o", &table).unwrap();
    let message = Message::with_parts(
        Role::User,
        vec![image_part("image/png", &png(1024, 1024), "high")],
    );
    assert_eq!(counter.count_message(&message, 0).unwrap().images, 9);
}

#[test]
fn local_files_are_read_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.png");
    std::fs::write(&path, png(2048, 4096)).unwrap();
    let part: ContentPart = serde_json::from_value(json!({
        "type": "image_url", "image_url": {"url": format!("file://{}", path.display()), "detail": "high"}
    }))
    .unwrap();
    let message = Message::with_parts(Role::User, vec![part]);
    let reading = TokenCounter::for_model("gpt-4o")
        .unwrap()
        .read_local_files(true);
    assert_eq!(reading.count_message(&message, 0).unwrap().images, 1105);
    let pure = TokenCounter::for_model("gpt-4o").unwrap();
    assert_eq!(pure.count_message(&message, 0).unwrap().images, 765);
}

#[test]
fn broken_image_data_is_rejected_with_its_pointer() {
    let message = Message::with_parts(
        Role::User,
        vec![
            ContentPart::text("x"),
            image_part("image/png", b"not an image", "high"),
        ],
    );
    let err = TokenCounter::for_model("gpt-4o")
        .unwrap()
        .count_message(&message, 4)
        .unwrap_err();
    let ContextError::Media(problem) = &err else {
        panic!("{err}")
    };
    assert_eq!(problem.pointer, "/messages/4/content/1/image_url/url");
}

fn wav_part(seconds: u32) -> ContentPart {
    let rate = 16000u32;
    let data_len = seconds * rate * 2;
    let mut v = b"RIFF".to_vec();
    v.extend((36 + data_len).to_le_bytes());
    v.extend(b"WAVEfmt ");
    v.extend(16u32.to_le_bytes());
    v.extend([1, 0, 1, 0]);
    v.extend(rate.to_le_bytes());
    v.extend((rate * 2).to_le_bytes());
    v.extend([2, 0, 16, 0]);
    v.extend(b"data");
    v.extend(data_len.to_le_bytes());
    v.extend(vec![0u8; data_len as usize]);
    serde_json::from_value(json!({
        "type": "input_audio", "input_audio": {"data": STANDARD.encode(v), "format": "wav"}
    }))
    .unwrap()
}

#[test]
fn wav_audio_costs_ten_tokens_a_second_on_openai() {
    let message = Message::with_parts(Role::User, vec![wav_part(3)]);
    let counter = TokenCounter::for_model("gpt-4o-audio-preview").unwrap();
    assert_eq!(counter.count_message(&message, 0).unwrap().audio, 30);
    let ContentPart::Audio(audio) = wav_part(2) else {
        unreachable!()
    };
    let gemini = MediaPricer::new(&CostTable::default(), "gemini-2.5-pro").unwrap();
    assert_eq!(gemini.audio(&audio, "/a").unwrap(), 64);
    let claude = MediaPricer::new(&CostTable::default(), "claude-sonnet-4-5").unwrap();
    assert!(
        claude
            .audio(&audio, "/a")
            .unwrap_err()
            .to_string()
            .contains("does not take")
    );
}

/// One image of each header format (PNG, JPEG, WebP, GIF) at `w`x`h`.
fn every_format(w: u16, h: u16) -> [(&'static str, Vec<u8>); 4] {
    [
        ("image/png", png(w.into(), h.into())),
        ("image/jpeg", jpeg(w, h)),
        ("image/webp", webp(w.into(), h.into())),
        ("image/gif", gif(w, h)),
    ]
}

#[test]
fn every_published_image_example_from_each_header_format() {
    // The legacy Anthropic rule and a patch model without multiplier are reached through a table
    // overlay, as a user would.
    let table = CostTable::with_overlay(
        r#"{"image_models":{"patches-plain":{"kind":"openai_patches","patch":32,"budget":1536,"multiplier":1.0}},
            "models":[{"prefix":"legacy-claude","image":"anthropic-legacy"},
                      {"prefix":"plain-patches","image":"patches-plain"}]}"#,
    )
    .unwrap();
    let examples: [(&str, u16, u16, &str, usize); 17] = [
        // OpenAI vision guide, tiles (gpt-4o): 1024x1024 high 765, 2048x4096 high 1105, low 85.
        ("gpt-4o", 1024, 1024, "high", 765),
        ("gpt-4o", 2048, 4096, "high", 1105),
        ("gpt-4o", 4096, 8192, "low", 85),
        ("gpt-4o", 1024, 1024, "auto", 765),
        // gpt-4o-mini's tiles: 2833 + 5667 * 4 for 1024x1024 high.
        ("gpt-4o-mini", 1024, 1024, "high", 25501),
        // OpenAI vision guide, 32-px patches: 1024x1024 = 1024; 1800x2400 -> 1056x1408 = 1452;
        // gpt-4.1-mini multiplies by 1.62 (rounded up).
        ("plain-patches", 1024, 1024, "auto", 1024),
        ("plain-patches", 1800, 2400, "auto", 1452),
        ("gpt-4.1-mini", 1024, 1024, "auto", 1659),
        ("gpt-4.1-mini", 1800, 2400, "auto", 2353),
        // Anthropic vision guide: 1092x1092 = 1521, 1000x1000 = 1296 (28-px patches); the older
        // w*h/750 table: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590.
        ("claude-sonnet-4-5", 1092, 1092, "auto", 1521),
        ("claude-sonnet-4-5", 1000, 1000, "auto", 1296),
        ("legacy-claude", 200, 200, "auto", 54),
        ("legacy-claude", 1000, 1000, "auto", 1334),
        ("legacy-claude", 1092, 1092, "auto", 1590),
        // Gemini: up to 384x384 is 258; 960x540 is 6 crop tiles of 258; Gemini 3 high 1120.
        ("gemini-2.5-flash", 384, 384, "auto", 258),
        ("gemini-2.5-flash", 960, 540, "auto", 1548),
        ("gemini-3-pro-preview", 4000, 3000, "high", 1120),
    ];
    for (model, w, h, detail, expected) in examples {
        let text = Arc::new(BpeEncoding::O200kBase);
        let counter = TokenCounter::with_tokenizer(text, model, &table).unwrap();
        for (mime, bytes) in every_format(w, h) {
            let message = Message::with_parts(Role::User, vec![image_part(mime, &bytes, detail)]);
            let images = counter.count_message(&message, 0).unwrap().images;
            assert_eq!(images, expected, "{model} {w}x{h} {detail} {mime}");
        }
    }
}

fn video_file(extra: serde_json::Value) -> ContentPart {
    let mut part = json!({
        "type": "file",
        "file": {"url": "gs://bucket/clip.mp4", "mime_type": "video/mp4"}
    });
    for (k, v) in extra.as_object().unwrap() {
        part[k] = v.clone();
    }
    serde_json::from_value(part).unwrap()
}

#[test]
fn gemini_video_costs_its_frames_and_its_audio_at_the_published_rates() {
    // Google's video understanding guide: frames sampled at 1 per second, 258 tokens a frame
    // (66 at media_resolution low) whatever the frame size, audio 32 tokens a second; Gemini 3:
    // 280 a frame at high (its default here), 70 at low and medium.
    let cases: [(&str, serde_json::Value, usize, usize); 5] = [
        ("gemini-2.5-pro", json!({"duration_sec": 10}), 2580, 320),
        (
            "gemini-2.5-flash",
            json!({"duration_sec": 10, "media_resolution": "low"}),
            660,
            320,
        ),
        (
            "gemini-2.5-pro",
            json!({"duration_sec": 10, "fps": 2}),
            5160,
            320,
        ),
        (
            "gemini-3-pro-preview",
            json!({"duration_sec": 10}),
            2800,
            320,
        ),
        (
            "gemini-3-pro-preview",
            json!({"duration_sec": 10, "media_resolution": "media_resolution_medium"}),
            700,
            320,
        ),
    ];
    for (model, extra, frames, audio) in cases {
        let counter = TokenCounter::for_model(model).unwrap();
        let message = Message::with_parts(Role::User, vec![video_file(extra.clone())]);
        let b = counter.count_message(&message, 0).unwrap();
        assert_eq!((b.images, b.audio), (frames, audio), "{model} {extra}");
    }
    // A frame given as an image is priced as a frame, not tiled by its size.
    let frame: ContentPart = serde_json::from_value(json!({
        "type": "image_url",
        "image_url": {"url": format!("data:image/png;base64,{}", STANDARD.encode(png(1920, 1080)))},
        "video_metadata": {"video_id": "clip", "timestamp_sec": 3}
    }))
    .unwrap();
    assert_eq!(image_cost("gemini-2.5-pro", &frame), 258);
    // Models that take no video files count its name only; a Gemini video needs its duration.
    let openai = TokenCounter::for_model("gpt-4o").unwrap();
    let message = Message::with_parts(Role::User, vec![video_file(json!({"duration_sec": 10}))]);
    assert_eq!(openai.count_message(&message, 0).unwrap().images, 0);
    let gemini = TokenCounter::for_model("gemini-2.5-pro").unwrap();
    let message = Message::with_parts(Role::User, vec![video_file(json!({}))]);
    let err = gemini.count_message(&message, 4).unwrap_err().to_string();
    assert!(
        err.contains("/messages/4/content/0") && err.contains("duration_sec"),
        "{err}"
    );
}
