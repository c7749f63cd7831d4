//! Applies an image's `rotation` (clockwise degrees) for targets that have no such field.

use std::io::Cursor;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chorus_core::ImageUrl;
use chorus_core::media::DataUrl;
use image::ImageFormat;

use crate::common::json::child;
use crate::loss::{Losses, Policy};

/// The URL to send for `image`: rotated when it is a base64 PNG or JPEG, unchanged otherwise
/// (a rotation that could not be applied is reported at `pointer/rotation`).
pub fn rotated_url(image: &ImageUrl, pointer: &str, losses: &mut Losses) -> String {
    let Some(degrees) = image.rotation.as_ref() else {
        return image.url.clone();
    };
    let path = child(pointer, "rotation");
    let turns = match degrees.as_f64() {
        Some(d) if d % 90.0 == 0.0 => (d / 90.0).rem_euclid(4.0) as u8,
        _ => {
            losses.push(
                path,
                Policy::Dropped,
                format!("rotation {degrees} is not a multiple of 90 degrees and was not applied"),
            );
            return image.url.clone();
        }
    };
    if turns == 0 {
        return image.url.clone();
    }
    let Some(data) = DataUrl::parse(&image.url) else {
        losses.push(
            path,
            Policy::Dropped,
            format!("rotation {degrees} cannot be applied to a URL image (inline it as base64 to rotate it)"),
        );
        return image.url.clone();
    };
    match rotate(data, turns) {
        Ok(url) => {
            losses.push(
                path,
                Policy::Applied,
                format!("image rotated {degrees} degrees clockwise before sending"),
            );
            url
        }
        Err(why) => {
            losses.push(
                path,
                Policy::Dropped,
                format!("rotation not applied: {why}"),
            );
            image.url.clone()
        }
    }
}

/// Rotates a base64 PNG or JPEG by `turns` quarter turns clockwise, as a new data URL.
fn rotate(data: DataUrl<'_>, turns: u8) -> Result<String, String> {
    let format = match data.media_type {
        "image/png" => ImageFormat::Png,
        "image/jpeg" | "image/jpg" => ImageFormat::Jpeg,
        other => return Err(format!("media type {other} is not PNG or JPEG")),
    };
    let bytes = STANDARD
        .decode(data.base64)
        .map_err(|e| format!("invalid base64 ({e})"))?;
    let img = image::load_from_memory_with_format(&bytes, format)
        .map_err(|e| format!("cannot decode the image ({e})"))?;
    let img = match turns {
        1 => img.rotate90(),
        2 => img.rotate180(),
        _ => img.rotate270(),
    };
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, format)
        .map_err(|e| format!("cannot encode the image ({e})"))?;
    Ok(format!(
        "data:{};base64,{}",
        data.media_type,
        STANDARD.encode(out.into_inner())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{Rgb, RgbImage};

    fn png_2x1() -> String {
        let mut img = RgbImage::new(2, 1);
        img.put_pixel(0, 0, Rgb([255, 0, 0]));
        img.put_pixel(1, 0, Rgb([0, 0, 255]));
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, ImageFormat::Png).unwrap();
        format!(
            "data:image/png;base64,{}",
            STANDARD.encode(out.into_inner())
        )
    }

    fn image(url: String, rotation: i64) -> ImageUrl {
        serde_json::from_value(serde_json::json!({"url": url, "rotation": rotation})).unwrap()
    }

    #[test]
    fn base64_png_is_rotated_clockwise() {
        let mut losses = Losses::default();
        let url = rotated_url(&image(png_2x1(), 90), "/p", &mut losses);
        let data = DataUrl::parse(&url).unwrap();
        let img = image::load_from_memory(&STANDARD.decode(data.base64).unwrap())
            .unwrap()
            .to_rgb8();
        assert_eq!(img.dimensions(), (1, 2));
        // clockwise: the left (red) pixel ends on top
        assert_eq!(img.get_pixel(0, 0), &Rgb([255, 0, 0]));
        assert_eq!(img.get_pixel(0, 1), &Rgb([0, 0, 255]));
        let losses = losses.finish(()).losses;
        assert_eq!(losses[0].policy, Policy::Applied);
        assert_eq!(losses[0].path, "/p/rotation");
    }

    #[test]
    fn url_images_report_the_rotation_as_lost() {
        let mut losses = Losses::default();
        let url = rotated_url(&image("https://x/a.png".into(), 180), "/p", &mut losses);
        assert_eq!(url, "https://x/a.png");
        assert_eq!(losses.finish(()).losses[0].policy, Policy::Dropped);
    }

    #[test]
    fn zero_rotation_is_a_no_op() {
        let mut losses = Losses::default();
        rotated_url(&image("https://x/a.png".into(), 360), "/p", &mut losses);
        assert!(losses.finish(()).losses.is_empty());
    }
}
