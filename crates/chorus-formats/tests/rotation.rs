//! An image part's `rotation` through every format with images: a base64 image arrives rotated
//! (reported as applied), a URL image keeps its pixels and the rotation is reported as dropped.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chorus_core::{Content, ContentPart, Conversation};
use chorus_formats::{EncodeOptions, Format, Policy};
use image::{Rgb, RgbImage};
use serde_json::json;

/// A 2x1 PNG: red on the left, blue on the right.
fn png_2x1() -> String {
    let mut img = RgbImage::new(2, 1);
    img.put_pixel(0, 0, Rgb([255, 0, 0]));
    img.put_pixel(1, 0, Rgb([0, 0, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    STANDARD.encode(out.into_inner())
}

fn conversation() -> Conversation {
    serde_json::from_value(json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "Which way is up?"},
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", png_2x1()), "rotation": 90}},
        {"type": "image_url", "image_url": {"url": "https://example.com/scan.png", "rotation": 180}}
    ]}]}))
    .unwrap()
}

/// The pixels of the first base64 image of the decoded conversation.
fn first_inline_image(conversation: &Conversation) -> RgbImage {
    let parts = match conversation.messages[0].content() {
        Some(Content::Parts(parts)) => parts,
        other => panic!("expected parts, found {other:?}"),
    };
    let url = parts
        .iter()
        .find_map(|p| match p {
            ContentPart::Image(img) if img.image_url.url.starts_with("data:") => {
                Some(img.image_url.url.clone())
            }
            _ => None,
        })
        .expect("the base64 image comes back");
    let data = url.split_once(";base64,").unwrap().1;
    image::load_from_memory(&STANDARD.decode(data).unwrap())
        .unwrap()
        .to_rgb8()
}

#[test]
fn every_image_format_rotates_base64_images_and_reports_url_rotations() {
    let formats = [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::Gemini,
        Format::AgentScope,
        Format::A2a,
    ];
    for format in formats {
        let encoded = format
            .encode(&conversation(), &EncodeOptions::default())
            .unwrap();
        let rotation_losses: Vec<_> = encoded
            .losses
            .iter()
            .filter(|l| l.path.ends_with("/rotation"))
            .map(|l| (l.path.as_str(), l.policy))
            .collect();
        assert_eq!(
            rotation_losses,
            [
                ("/messages/0/content/1/image_url/rotation", Policy::Applied),
                ("/messages/0/content/2/image_url/rotation", Policy::Dropped)
            ],
            "{}",
            format.id()
        );
        assert!(
            !encoded.value.contains("\"rotation\""),
            "{}: {}",
            format.id(),
            encoded.value
        );
        let back = format.decode(&encoded.value).unwrap();
        let img = first_inline_image(&back);
        assert_eq!(img.dimensions(), (1, 2), "{}", format.id());
        assert_eq!(
            img.get_pixel(0, 0),
            &Rgb([255, 0, 0]),
            "{}: clockwise",
            format.id()
        );
        assert!(
            encoded.value.contains("https://example.com/scan.png"),
            "{}",
            format.id()
        );
    }
}

#[test]
fn chorus_keeps_the_rotation_field() {
    let encoded = Format::Chorus
        .encode(&conversation(), &EncodeOptions::default())
        .unwrap();
    assert_eq!(encoded.losses, []);
    assert_eq!(encoded.value.matches("\"rotation\"").count(), 2);
}
