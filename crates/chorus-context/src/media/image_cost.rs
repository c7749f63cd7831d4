//! Image token formulas of the providers, driven by the parameters of an [`ImageModel`].

use chorus_core::Detail;

use super::table::{ImageModel, ResolutionLevels};

/// What the caller asked for: OpenAI `detail` or a Gemini 3 `media_resolution` level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageRequest {
    /// Requested detail; `None` means the provider default.
    pub detail: Option<Detail>,
    /// Gemini 3 `media_resolution` (`low`, `medium`, `high`), if given.
    pub resolution: Option<Resolution>,
    /// True for a frame taken from a video.
    pub video_frame: bool,
}

impl ImageRequest {
    /// The Gemini `media_resolution` level asked for, or the one OpenAI's `detail` names.
    fn level(&self) -> Option<Resolution> {
        self.resolution.or(match self.detail {
            Some(Detail::Low) => Some(Resolution::Low),
            Some(Detail::High) => Some(Resolution::High),
            _ => None,
        })
    }
}

/// Gemini 3 media resolution levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// `media_resolution_low`.
    Low,
    /// `media_resolution_medium`.
    Medium,
    /// `media_resolution_high`.
    High,
}

impl Resolution {
    /// Reads `low`, `medium`, `high`, with or without the `media_resolution_` prefix.
    pub fn parse(text: &str) -> Option<Self> {
        let level = text
            .trim()
            .to_ascii_lowercase()
            .trim_start_matches("media_resolution_")
            .to_owned();
        match level.as_str() {
            "low" => Some(Resolution::Low),
            "medium" => Some(Resolution::Medium),
            "high" => Some(Resolution::High),
            _ => None,
        }
    }
}

/// Tokens of a `width` x `height` image under `model`.
///
/// OpenAI `detail: auto` is counted as `high` (the provider may choose less: an upper bound).
pub fn image_tokens(model: &ImageModel, width: u32, height: u32, request: ImageRequest) -> u64 {
    let (w, h) = (u64::from(width.max(1)), u64::from(height.max(1)));
    match model {
        ImageModel::OpenaiTiles {
            base,
            tile,
            max_side,
            short_side,
            tile_size,
        } => {
            if request.detail == Some(Detail::Low) {
                return u64::from(*base);
            }
            let (w, h) = fit_within(w, h, u64::from(*max_side));
            let (w, h) = shortest_side_to(w, h, u64::from(*short_side));
            let t = u64::from(*tile_size);
            u64::from(*base) + u64::from(*tile) * w.div_ceil(t) * h.div_ceil(t)
        }
        ImageModel::OpenaiPatches {
            patch,
            budget,
            multiplier,
        } => {
            let patches = openai_patches(w, h, u64::from(*patch), u64::from(*budget));
            (patches as f64 * multiplier).ceil() as u64
        }
        ImageModel::AnthropicPatches {
            patch,
            max_long_edge,
            max_tokens,
        } => {
            let p = u64::from(*patch);
            let (w, h) =
                anthropic_resize(w, h, p, u64::from(*max_long_edge), u64::from(*max_tokens));
            w.div_ceil(p) * h.div_ceil(p)
        }
        ImageModel::AnthropicArea {
            pixels_per_token,
            max_long_edge,
            max_pixels,
        } => {
            let (w, h) = fit_within(w, h, u64::from(*max_long_edge));
            let (mut w, mut h) = (w as f64, h as f64);
            if w * h > *max_pixels {
                let s = (max_pixels / (w * h)).sqrt();
                w = (w * s).floor();
                h = (h * s).floor();
            }
            (w * h / pixels_per_token).ceil() as u64
        }
        ImageModel::GeminiTiles {
            small_side,
            tile_tokens,
            crop_divisor,
            video_frame,
        } => {
            if request.video_frame {
                return u64::from(match request.level() {
                    Some(Resolution::Low) => video_frame.low,
                    Some(Resolution::High) => video_frame.high,
                    _ => video_frame.medium,
                });
            }
            let small = u64::from(*small_side);
            if w <= small && h <= small {
                return u64::from(*tile_tokens);
            }
            let unit = ((w.min(h) as f64 / crop_divisor).floor() as u64).max(1);
            u64::from(*tile_tokens) * w.div_ceil(unit) * h.div_ceil(unit)
        }
        ImageModel::GeminiResolution {
            default,
            image,
            video_frame,
        } => {
            let levels: &ResolutionLevels = if request.video_frame {
                video_frame
            } else {
                image
            };
            let level = request
                .level()
                .or_else(|| Resolution::parse(default))
                .unwrap_or(Resolution::High);
            u64::from(match level {
                Resolution::Low => levels.low,
                Resolution::Medium => levels.medium,
                Resolution::High => levels.high,
            })
        }
    }
}

/// Scales down (never up) so that both sides fit in `max`, keeping the aspect ratio.
fn fit_within(w: u64, h: u64, max: u64) -> (u64, u64) {
    let long = w.max(h);
    if long <= max {
        return (w, h);
    }
    ((w * max / long).max(1), (h * max / long).max(1))
}

/// Scales down (never up) so that the shortest side is `target`.
fn shortest_side_to(w: u64, h: u64, target: u64) -> (u64, u64) {
    let short = w.min(h);
    if short <= target {
        return (w, h);
    }
    ((w * target / short).max(1), (h * target / short).max(1))
}

/// OpenAI's patch count: raw patches, or when over budget the shrunk image's patches.
fn openai_patches(w: u64, h: u64, patch: u64, budget: u64) -> u64 {
    let raw = w.div_ceil(patch) * h.div_ceil(patch);
    if raw <= budget {
        return raw;
    }
    let (wf, hf, pf) = (w as f64, h as f64, patch as f64);
    let shrink = (pf * pf * budget as f64 / (wf * hf)).sqrt();
    let cols = wf * shrink / pf;
    let rows = hf * shrink / pf;
    let adjusted = shrink * (cols.floor() / cols).min(rows.floor() / rows);
    let rw = (wf * adjusted).floor() as u64;
    let rh = (hf * adjusted).floor() as u64;
    (rw.div_ceil(patch) * rh.div_ceil(patch)).min(budget)
}

/// The largest aspect-preserving size within `max_edge` whose patch count is within `max_tokens`.
fn anthropic_resize(w: u64, h: u64, patch: u64, max_edge: u64, max_tokens: u64) -> (u64, u64) {
    let patches = |a: u64, b: u64| a.div_ceil(patch) * b.div_ceil(patch);
    if w.max(h) <= max_edge && patches(w, h) <= max_tokens {
        return (w, h);
    }
    let (long, short) = (w.max(h), w.min(h));
    let mut edge = long.min(max_edge);
    loop {
        let side = (short * edge / long).max(1);
        if patches(edge, side) <= max_tokens || edge == 1 {
            return if w >= h { (edge, side) } else { (side, edge) };
        }
        edge -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::media::table::CostTable;

    fn model(key: &str) -> ImageModel {
        CostTable::default().image_models[key].clone()
    }

    fn req(detail: Option<Detail>) -> ImageRequest {
        ImageRequest {
            detail,
            resolution: None,
            video_frame: false,
        }
    }

    #[test]
    fn openai_tile_examples() {
        let gpt4o = model("openai-tiles-85-170");
        // OpenAI vision guide: 1024x1024 high = 765; 2048x4096 high = 1105; any low = 85.
        assert_eq!(
            image_tokens(&gpt4o, 1024, 1024, req(Some(Detail::High))),
            765
        );
        assert_eq!(
            image_tokens(&gpt4o, 2048, 4096, req(Some(Detail::High))),
            1105
        );
        assert_eq!(image_tokens(&gpt4o, 4096, 8192, req(Some(Detail::Low))), 85);
        assert_eq!(
            image_tokens(&gpt4o, 1024, 1024, req(Some(Detail::Auto))),
            765
        );
    }

    #[test]
    fn openai_patch_examples() {
        let plain = ImageModel::OpenaiPatches {
            patch: 32,
            budget: 1536,
            multiplier: 1.0,
        };
        // OpenAI vision guide: 1024x1024 = 1024 patches; 1800x2400 -> 1056x1408 = 1452 patches.
        assert_eq!(image_tokens(&plain, 1024, 1024, req(None)), 1024);
        assert_eq!(image_tokens(&plain, 1800, 2400, req(None)), 1452);
        let mini = model("openai-patches-1.62");
        assert_eq!(image_tokens(&mini, 1024, 1024, req(None)), 1659); // ceil(1024 * 1.62)
    }

    #[test]
    fn anthropic_examples() {
        let claude = model("anthropic-1568");
        // Anthropic vision guide: 1092x1092 = 39 x 39 patches = 1521; 1000x1000 = 36 x 36 = 1296.
        assert_eq!(image_tokens(&claude, 1092, 1092, req(None)), 1521);
        assert_eq!(image_tokens(&claude, 1000, 1000, req(None)), 1296);
        // Large images are resized within the 1568-token cap.
        let big = image_tokens(&claude, 3000, 2000, req(None));
        assert!(big <= 1568 && big > 1500, "{big}");
        let legacy = model("anthropic-legacy");
        // The older table: 200x200 ~54, 1000x1000 ~1334, 1092x1092 ~1590.
        assert_eq!(image_tokens(&legacy, 200, 200, req(None)), 54);
        assert_eq!(image_tokens(&legacy, 1000, 1000, req(None)), 1334);
        assert_eq!(image_tokens(&legacy, 1092, 1092, req(None)), 1590);
    }

    #[test]
    fn gemini_examples() {
        let gemini = model("gemini-tiles");
        assert_eq!(image_tokens(&gemini, 384, 384, req(None)), 258);
        // 960x540: crop unit 360 -> 3 x 2 tiles = 1548.
        assert_eq!(image_tokens(&gemini, 960, 540, req(None)), 1548);
        let g3 = model("gemini-3");
        assert_eq!(image_tokens(&g3, 4000, 3000, req(None)), 1120);
        assert_eq!(image_tokens(&g3, 4000, 3000, req(Some(Detail::Low))), 280);
        let frame = ImageRequest {
            detail: None,
            resolution: Resolution::parse("media_resolution_low"),
            video_frame: true,
        };
        assert_eq!(image_tokens(&g3, 640, 480, frame), 70);
    }
}
