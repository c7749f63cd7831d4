//! Cost of model calls: a price table kept as data (built in, overridable from a file) and
//! totals per agent, task and flow.
//!
//! The built-in table is `data/prices.json` (US dollars per million input and output tokens,
//! with the date the prices were taken). A user file of the same shape — JSON, or TOML with a
//! `[models."name"]` table per model — is merged over it with [`PriceTable::merged_with_file`];
//! [`PriceTable::from_env`] does so for the file named by `CHORUS_PRICES`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use chorus_core::TokenUsage;
use serde::{Deserialize, Serialize};

/// Environment variable naming a price file merged over the built-in table.
pub const PRICES_VAR: &str = "CHORUS_PRICES";

const BUILTIN: &str = include_str!("../data/prices.json");

static BUILTIN_TABLE: LazyLock<Arc<PriceTable>> = LazyLock::new(|| {
    Arc::new(serde_json::from_str(BUILTIN).expect("data/prices.json is a valid price table"))
});

/// The price of one model, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Per million prompt (input) tokens.
    pub input: f64,
    /// Per million completion (output) tokens.
    pub output: f64,
}

/// Prices by model name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    /// Where the prices come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub about: Option<String>,
    /// When the prices were taken (`YYYY-MM`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<String>,
    /// Model name → price.
    pub models: BTreeMap<String, Price>,
}

/// A price file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PriceError {
    /// The file could not be read.
    #[error("cannot read price file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a price table.
    #[error(
        "price file {path} is not a price table: {message} (expected {{\"models\": {{\"NAME\": {{\"input\": USD_PER_MILLION, \"output\": USD_PER_MILLION}}}}}})"
    )]
    Parse {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// A price is negative or not a number.
    #[error("price file {path}: /models/{model}: prices must be finite and not negative")]
    Negative {
        /// The file.
        path: String,
        /// The model.
        model: String,
    },
}

impl PriceTable {
    /// The built-in table (loaded once).
    pub fn builtin() -> Arc<PriceTable> {
        Arc::clone(&BUILTIN_TABLE)
    }

    /// The built-in table, merged with the file named by `CHORUS_PRICES` if it is set.
    pub fn from_env() -> Result<Arc<PriceTable>, PriceError> {
        match std::env::var_os(PRICES_VAR) {
            Some(path) => Ok(Arc::new(
                Self::builtin().merged_with_file(Path::new(&path))?,
            )),
            None => Ok(Self::builtin()),
        }
    }

    /// Reads a table from a `.toml` file, or JSON otherwise.
    pub fn load(path: &Path) -> Result<PriceTable, PriceError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| PriceError::Read {
            path: shown.clone(),
            source,
        })?;
        let table: PriceTable = if path.extension().is_some_and(|e| e == "toml") {
            toml::from_str(&text).map_err(|e| e.to_string())
        } else {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        }
        .map_err(|message| PriceError::Parse {
            path: shown.clone(),
            message,
        })?;
        if let Some((model, _)) = table.models.iter().find(|(_, p)| {
            !(p.input.is_finite() && p.output.is_finite() && p.input >= 0.0 && p.output >= 0.0)
        }) {
            return Err(PriceError::Negative {
                path: shown,
                model: model.clone(),
            });
        }
        Ok(table)
    }

    /// This table with the prices of `path` added or replacing ours.
    pub fn merged_with_file(&self, path: &Path) -> Result<PriceTable, PriceError> {
        Ok(self.merged(Self::load(path)?))
    }

    /// This table with `other`'s prices added or replacing ours.
    pub fn merged(&self, other: PriceTable) -> PriceTable {
        let mut out = self.clone();
        out.models.extend(other.models);
        if other.as_of.is_some() {
            out.as_of = other.as_of;
        }
        if other.about.is_some() {
            out.about = other.about;
        }
        out
    }

    /// The price of `model`: an exact match, else without a `provider/` prefix and with `:`
    /// read as `-` (`openai/gpt-4o`, `gpt-oss:20b`), else the longest known name it starts
    /// with followed by `-` (dated versions such as `gpt-4o-2024-08-06`).
    pub fn price(&self, model: &str) -> Option<Price> {
        if let Some(price) = self.models.get(model) {
            return Some(*price);
        }
        let short = model.rsplit('/').next().unwrap_or(model).replace(':', "-");
        if let Some(price) = self.models.get(&short) {
            return Some(*price);
        }
        self.models
            .iter()
            .filter(|(name, _)| {
                short
                    .strip_prefix(name.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
            })
            .max_by_key(|(name, _)| name.len())
            .map(|(_, price)| *price)
    }

    /// The cost of `usage` with `model`, if the model has a price and the usage has counts.
    pub fn cost(&self, model: &str, usage: &TokenUsage) -> Option<f64> {
        let price = self.price(model)?;
        if usage.prompt_tokens.is_none() && usage.completion_tokens.is_none() {
            return None;
        }
        let input = usage.prompt_tokens.unwrap_or(0) as f64;
        let output = usage.completion_tokens.unwrap_or(0) as f64;
        Some(round(
            (input * price.input + output * price.output) / 1_000_000.0,
        ))
    }

    /// Sets `usage.total_cost_usd` from the table; returns whether a price was found.
    pub fn apply(&self, model: &str, usage: &mut TokenUsage) -> bool {
        let cost = self.cost(model, usage);
        usage.total_cost_usd = cost.and_then(serde_json::Number::from_f64);
        cost.is_some()
    }
}

/// Rounds to a billionth of a dollar, so sums print without float noise.
fn round(usd: f64) -> f64 {
    (usd * 1e9).round() / 1e9
}

/// Token and cost totals of a set of model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Model calls counted.
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt plus completion tokens.
    pub total_tokens: u64,
    /// Cost in US dollars of the calls that had a price.
    pub cost_usd: f64,
    /// Calls without a cost (unknown model or no usage reported).
    pub unpriced_calls: u64,
    /// Total model time in milliseconds, where the calls' latency was measured.
    #[serde(default)]
    pub latency_ms: f64,
}

impl UsageTotals {
    /// Adds one call's usage.
    pub fn add(&mut self, usage: &TokenUsage) {
        self.calls += 1;
        let prompt = usage.prompt_tokens.unwrap_or(0);
        let completion = usage.completion_tokens.unwrap_or(0);
        self.prompt_tokens += prompt;
        self.completion_tokens += completion;
        self.total_tokens += usage.total_tokens.unwrap_or(prompt + completion);
        match usage.total_cost_usd.as_ref().and_then(|n| n.as_f64()) {
            Some(cost) => self.cost_usd = round(self.cost_usd + cost),
            None => self.unpriced_calls += 1,
        }
    }

    /// Adds one call from the usage and latency the client put in its reply message's metadata
    /// (a reply without usage counts as an unpriced call).
    pub fn add_reply(&mut self, message: &chorus_core::Message) {
        let meta = message.metadata.as_ref();
        match meta.and_then(|m| m.token_usage.as_ref()) {
            Some(usage) => self.add(usage),
            None => {
                self.calls += 1;
                self.unpriced_calls += 1;
            }
        }
        if let Some(total) = meta
            .and_then(|m| m.latency_ms.as_ref())
            .and_then(|l| l.total_time.as_ref())
            .and_then(serde_json::Number::as_f64)
        {
            self.latency_ms += total;
        }
    }

    /// Adds another set of totals.
    pub fn merge(&mut self, other: &UsageTotals) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
        self.cost_usd = round(self.cost_usd + other.cost_usd);
        self.unpriced_calls += other.unpriced_calls;
        self.latency_ms += other.latency_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt: u64, completion: u64) -> TokenUsage {
        TokenUsage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            total_tokens: Some(prompt + completion),
            ..TokenUsage::default()
        }
    }

    #[test]
    fn builtin_table_prices_known_models_and_local_gpt_oss_is_free() {
        let table = PriceTable::builtin();
        assert!(table.as_of.is_some());
        let mini = table.price("gpt-4o-mini").unwrap();
        // 1M input + 1M output tokens cost exactly the two listed prices.
        assert_eq!(
            table.cost("gpt-4o-mini", &usage(1_000_000, 1_000_000)),
            Some(round(mini.input + mini.output))
        );
        assert_eq!(table.cost("gpt-oss-20b", &usage(5000, 800)), Some(0.0));
        assert_eq!(table.cost("no-such-model", &usage(1, 1)), None);
    }

    #[test]
    fn names_match_through_prefix_colon_and_dated_versions() {
        let table = PriceTable::builtin();
        assert_eq!(table.price("openai/gpt-4o"), table.price("gpt-4o"));
        assert_eq!(table.price("gpt-oss:20b"), table.price("gpt-oss-20b"));
        // The longest matching name wins: a dated gpt-4o-mini is not priced as gpt-4o.
        assert_eq!(
            table.price("gpt-4o-mini-2024-07-18"),
            table.price("gpt-4o-mini")
        );
        assert_ne!(table.price("gpt-4o-mini"), table.price("gpt-4o"));
        assert_eq!(table.price("gpt-4ox"), None);
    }

    #[test]
    fn apply_sets_total_cost_from_usage() {
        let table = PriceTable {
            models: [(
                "m".to_owned(),
                Price {
                    input: 2.0,
                    output: 8.0,
                },
            )]
            .into(),
            ..PriceTable::default()
        };
        let mut u = usage(1500, 500);
        assert!(table.apply("m", &mut u));
        // 1500 × 2 / 1e6 + 500 × 8 / 1e6 = 0.003 + 0.004
        assert_eq!(u.total_cost_usd.unwrap().as_f64(), Some(0.007));
        let mut none = TokenUsage::default();
        assert!(!table.apply("m", &mut none));
        assert_eq!(none.total_cost_usd, None);
    }

    #[test]
    fn user_file_overrides_and_extends_the_builtin_table() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("prices.json");
        std::fs::write(
            &json,
            r#"{"as_of": "2030-01", "models": {"gpt-4o": {"input": 1, "output": 2}, "mine": {"input": 0.5, "output": 0.5}}}"#,
        )
        .unwrap();
        let merged = PriceTable::builtin().merged_with_file(&json).unwrap();
        assert_eq!(
            merged.price("gpt-4o"),
            Some(Price {
                input: 1.0,
                output: 2.0
            })
        );
        assert_eq!(merged.price("mine").map(|p| p.input), Some(0.5));
        assert_eq!(
            merged.price("gpt-4.1"),
            PriceTable::builtin().price("gpt-4.1")
        );
        assert_eq!(merged.as_of.as_deref(), Some("2030-01"));

        let toml = dir.path().join("prices.toml");
        std::fs::write(&toml, "[models.\"local\"]\ninput = 0.0\noutput = 0.0\n").unwrap();
        assert_eq!(PriceTable::load(&toml).unwrap().models.len(), 1);

        std::fs::write(&json, r#"{"models": {"x": {"input": -1, "output": 0}}}"#).unwrap();
        let err = PriceTable::load(&json).unwrap_err().to_string();
        assert!(err.contains("/models/x"), "{err}");
        std::fs::write(&json, r#"{"models": {"x": {"in": 1}}}"#).unwrap();
        let err = PriceTable::load(&json).unwrap_err().to_string();
        assert!(err.contains("not a price table"), "{err}");
    }

    #[test]
    fn usage_totals_add_priced_and_unpriced_calls_and_merge() {
        let table = PriceTable {
            models: [(
                "m".to_owned(),
                Price {
                    input: 1.0,
                    output: 1.0,
                },
            )]
            .into(),
            ..PriceTable::default()
        };
        let priced = |p, c| {
            let mut u = usage(p, c);
            table.apply("m", &mut u);
            u
        };
        let (mut a, mut b) = (UsageTotals::default(), UsageTotals::default());
        a.add(&priced(1000, 1000));
        b.add(&priced(500, 0));
        a.add(&priced(0, 250));
        b.add(&usage(10, 10));
        assert_eq!((a.calls, a.cost_usd, a.unpriced_calls), (2, 0.00225, 0));
        assert_eq!((b.calls, b.prompt_tokens, b.unpriced_calls), (2, 510, 1));
        let mut both = a;
        both.merge(&b);
        assert_eq!(both.calls, 4);
        assert_eq!(both.total_tokens, 2770);
        assert_eq!(both.cost_usd, 0.00275);
        assert_eq!(both.unpriced_calls, 1);
    }
}
