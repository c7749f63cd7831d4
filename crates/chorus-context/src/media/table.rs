//! The media cost table: data, not code. The default is embedded; users overlay their own JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ContextError, Result};

/// The embedded default table (`src/media/costs.json`).
pub(crate) const DEFAULT_COSTS_JSON: &str = include_str!("costs.json");

/// Width and height in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Size {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// Token counts per Gemini 3 `media_resolution` level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolutionLevels {
    /// `media_resolution_low`.
    pub low: u32,
    /// `media_resolution_medium`.
    pub medium: u32,
    /// `media_resolution_high`.
    pub high: u32,
}

/// How one provider family turns an image into tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageModel {
    /// OpenAI tiles: fit in `max_side`, shortest side down to `short_side`, count `tile_size` tiles.
    OpenaiTiles {
        /// Tokens of every image (all of a `detail: low` image).
        base: u32,
        /// Tokens per tile.
        tile: u32,
        /// The image is first scaled to fit a `max_side` square.
        max_side: u32,
        /// Then its shortest side is scaled down to this.
        short_side: u32,
        /// Tile edge in pixels.
        tile_size: u32,
    },
    /// OpenAI patches: `patch`-px patches up to `budget`, times a per-model multiplier.
    OpenaiPatches {
        /// Patch edge in pixels.
        patch: u32,
        /// Most patches an image may use.
        budget: u32,
        /// Billing multiplier per model.
        multiplier: f64,
    },
    /// Anthropic patches: one token per `patch`-px square, after resizing within the limits.
    AnthropicPatches {
        /// Patch edge in pixels.
        patch: u32,
        /// Longest edge the model takes natively.
        max_long_edge: u32,
        /// Most tokens an image may cost.
        max_tokens: u32,
    },
    /// Anthropic's older rule: `width * height / pixels_per_token`, rounded up.
    AnthropicArea {
        /// Pixels per token: 750.
        pixels_per_token: f64,
        /// Longest edge before downscaling.
        max_long_edge: u32,
        /// Most pixels before downscaling (~1,600 tokens x 750).
        max_pixels: f64,
    },
    /// Gemini 2.x: small images cost one tile, larger ones are cut into crop units.
    GeminiTiles {
        /// Both sides at most this: one tile.
        small_side: u32,
        /// Tokens per tile: 258.
        tile_tokens: u32,
        /// Crop unit = shortest side / this.
        crop_divisor: f64,
        /// Costs of video frames, whatever their size: 66 at `media_resolution_low`, else 258.
        #[serde(default = "gemini_tiles_video_frame")]
        video_frame: ResolutionLevels,
    },
    /// Gemini 3: a fixed cost per `media_resolution` level.
    GeminiResolution {
        /// Level used when the part does not ask for one: `low`, `medium` or `high`.
        default: String,
        /// Costs of images.
        image: ResolutionLevels,
        /// Costs of video frames.
        video_frame: ResolutionLevels,
    },
}

/// Which image model and audio rate apply to models whose name starts with `prefix`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRule {
    /// Model-name prefix; the first matching rule wins, `""` matches every model.
    pub prefix: String,
    /// Key into `image_models`.
    pub image: String,
    /// Audio input tokens per second; absent when the model takes no audio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_tokens_per_second: Option<f64>,
    /// Frames per second a whole video file is sampled at (each priced as a video frame, plus
    /// its audio track at the audio rate); absent when the model takes no video files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_frames_per_second: Option<f64>,
}

/// Gemini 2.x video frames: 66 tokens at `media_resolution_low`, 258 otherwise (Google's video
/// understanding guide), for tables written before the field existed.
fn gemini_tiles_video_frame() -> ResolutionLevels {
    ResolutionLevels {
        low: 66,
        medium: 258,
        high: 258,
    }
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostTable {
    /// Size assumed for remote images without size hints.
    pub remote_image_default: Size,
    /// Image models by key.
    pub image_models: BTreeMap<String, ImageModel>,
    /// Model rules, most specific first.
    pub models: Vec<ModelRule>,
}

impl Default for CostTable {
    fn default() -> Self {
        serde_json::from_str(DEFAULT_COSTS_JSON).expect("the embedded cost table is valid")
    }
}

impl CostTable {
    /// Reads a complete table from JSON.
    pub fn from_json(text: &str) -> Result<Self> {
        let table: CostTable = serde_json::from_str(text).map_err(|e| ContextError::CostTable {
            pointer: format!("(line {}, column {})", e.line(), e.column()),
            message: e.to_string(),
        })?;
        table.check()?;
        Ok(table)
    }

    /// The default table with `overlay` applied: its `image_models` replace or add entries by
    /// key, its `models` rules are tried before the default ones, and its
    /// `remote_image_default` replaces the default size.
    pub fn with_overlay(overlay: &str) -> Result<Self> {
        let bad = |pointer: &str, message: String| ContextError::CostTable {
            pointer: pointer.into(),
            message,
        };
        let value: Value = serde_json::from_str(overlay).map_err(|e| bad("", e.to_string()))?;
        let mut table = CostTable::default();
        if let Some(models) = value.get("image_models") {
            let models: BTreeMap<String, ImageModel> = serde_json::from_value(models.clone())
                .map_err(|e| bad("/image_models", e.to_string()))?;
            table.image_models.extend(models);
        }
        if let Some(rules) = value.get("models") {
            let mut rules: Vec<ModelRule> =
                serde_json::from_value(rules.clone()).map_err(|e| bad("/models", e.to_string()))?;
            rules.append(&mut table.models);
            table.models = rules;
        }
        if let Some(size) = value.get("remote_image_default") {
            table.remote_image_default = serde_json::from_value(size.clone())
                .map_err(|e| bad("/remote_image_default", e.to_string()))?;
        }
        table.check()?;
        Ok(table)
    }

    /// The rule for `model`.
    pub fn rule(&self, model: &str) -> Option<&ModelRule> {
        self.models.iter().find(|r| model.starts_with(&r.prefix))
    }

    fn check(&self) -> Result<()> {
        for (i, rule) in self.models.iter().enumerate() {
            if !self.image_models.contains_key(&rule.image) {
                return Err(ContextError::CostTable {
                    pointer: format!("/models/{i}/image"),
                    message: format!("expected a key of image_models; found `{}`", rule.image),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_table_is_consistent_and_most_specific_rule_wins() {
        let table = CostTable::default();
        table.check().unwrap();
        assert_eq!(
            table.rule("gpt-4o-mini-2024").unwrap().image,
            "openai-tiles-2833-5667"
        );
        assert_eq!(table.rule("gpt-4o").unwrap().image, "openai-tiles-85-170");
        assert_eq!(
            table.rule("claude-sonnet-4-5").unwrap().image,
            "anthropic-1568"
        );
        assert_eq!(table.rule("some-model").unwrap().prefix, "");
    }

    #[test]
    fn overlay_adds_rules_in_front_and_rejects_dangling_keys() {
        let t = CostTable::with_overlay(
            r#"{"models":[{"prefix":"gpt-4o","image":"anthropic-legacy"}]}"#,
        )
        .unwrap();
        assert_eq!(t.rule("gpt-4o").unwrap().image, "anthropic-legacy");
        let err =
            CostTable::with_overlay(r#"{"models":[{"prefix":"x","image":"nope"}]}"#).unwrap_err();
        assert!(err.to_string().contains("/models/0/image"), "{err}");
    }
}
