//! Where a model endpoint is and how patiently to talk to it.

use std::sync::Arc;
use std::time::Duration;

use super::ModelError;
use crate::cost::PriceTable;

/// Environment variable with the base URL of the model endpoint (tried first).
pub(crate) const BASE_URL_VAR: &str = "CHORUS_MODEL_BASE_URL";
/// Environment variable with the base URL, used when [`BASE_URL_VAR`] is unset.
pub(crate) const OPENAI_BASE_URL_VAR: &str = "OPENAI_BASE_URL";
/// Environment variable with the API key (optional for local servers).
pub(crate) const API_KEY_VAR: &str = "OPENAI_API_KEY";

/// Environment variable with the silence limit of a streamed reply, in seconds.
pub(crate) const IDLE_TIMEOUT_VAR: &str = "CHORUS_MODEL_IDLE_TIMEOUT_SECS";

/// Which request field carries the token limit (`ModelRequest::max_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens`: Chat Completions before the reasoning models, vLLM, Ollama, llama.cpp.
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI's reasoning models (o1, o3, o4, gpt-5 …) require
    /// (they refuse `max_tokens`).
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The field for `model` by its name: `max_completion_tokens` for OpenAI's reasoning
    /// families (a name, after any `provider/` prefix, starting with `o1`, `o3`, `o4` or
    /// `gpt-5`), else `max_tokens`.
    pub fn for_model(model: &str) -> Self {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let family = |prefix: &str| {
            name.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.', '_']))
        };
        if ["o1", "o3", "o4"].iter().any(|p| family(p)) || name.starts_with("gpt-5") {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        }
    }

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// Endpoint, credentials, retries, timeouts and prices shared by the model clients.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Base URL up to and including the API version, e.g. `http://localhost:8000/v1`.
    pub base_url: String,
    /// Bearer token, if the endpoint wants one.
    pub api_key: Option<String>,
    /// Longest wait for a response to start (status and headers), and for the whole body of a
    /// reply that is not streamed.
    pub timeout: Duration,
    /// Longest silence in a streamed reply: no byte for this long fails the call (not retried:
    /// part of the reply may already have been streamed to `events`). A reply
    /// that keeps sending may take as long as it needs in total.
    pub idle_timeout: Duration,
    /// The token-limit field to send; `None` decides by the model name
    /// ([`MaxTokensField::for_model`]).
    pub max_tokens_field: Option<MaxTokensField>,
    /// Attempts in all (the first one included) on 429, 5xx and broken connections.
    pub max_attempts: u32,
    /// Delay before the first retry; doubles on each further retry, with jitter.
    pub backoff: Duration,
    /// Longest delay between attempts (also caps a server's `Retry-After`).
    pub max_backoff: Duration,
    /// Prices used to fill `metadata.token_usage.total_cost_usd`; `None` leaves it empty.
    pub prices: Option<Arc<PriceTable>>,
}

impl EndpointConfig {
    /// A configuration for `base_url` with no key, 300 s to the start of a response and 300 s
    /// of silence at most in a stream (a local model reading a long prompt is slow to its first
    /// token), 4 attempts from 500 ms backoff up to 20 s, and the built-in price table.
    pub fn new(base_url: impl Into<String>) -> Self {
        EndpointConfig {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            timeout: Duration::from_secs(300),
            idle_timeout: Duration::from_secs(300),
            max_tokens_field: None,
            max_attempts: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            prices: Some(PriceTable::builtin()),
        }
    }

    /// Reads the base URL from `CHORUS_MODEL_BASE_URL`, else `OPENAI_BASE_URL`, the key from
    /// `OPENAI_API_KEY`, and the silence limit of a stream from
    /// `CHORUS_MODEL_IDLE_TIMEOUT_SECS` (seconds).
    pub fn from_env() -> Result<Self, ModelError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`EndpointConfig::from_env`], reading variables through `lookup` (for tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ModelError> {
        let present = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let base = present(BASE_URL_VAR)
            .or_else(|| present(OPENAI_BASE_URL_VAR))
            .ok_or_else(|| {
                ModelError::Config(format!(
                    "no model endpoint: set {BASE_URL_VAR} (or {OPENAI_BASE_URL_VAR}) to a base URL such as http://localhost:8000/v1"
                ))
            })?;
        let mut config = Self::new(base);
        config.api_key = present(API_KEY_VAR);
        if let Some(secs) = present(IDLE_TIMEOUT_VAR) {
            config.idle_timeout = secs
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| *s > 0.0)
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or_else(|| {
                    ModelError::Config(format!(
                        "{IDLE_TIMEOUT_VAR}: expected a positive number of seconds, found {secs:?}"
                    ))
                })?;
        }
        Ok(config)
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the longest wait for a response to start (and for a body that is not streamed).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the longest silence in a streamed reply.
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// Sends the token limit in `field` whatever the model (instead of deciding by its name).
    pub fn with_max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = Some(field);
        self
    }

    /// The token-limit field for `model`: the configured one, else by the model's name.
    pub fn max_tokens_key(&self, model: &str) -> &'static str {
        self.max_tokens_field
            .unwrap_or_else(|| MaxTokensField::for_model(model))
            .key()
    }

    /// Sets the number of attempts and the first backoff delay.
    pub fn with_retries(mut self, max_attempts: u32, backoff: Duration) -> Self {
        self.max_attempts = max_attempts.max(1);
        self.backoff = backoff;
        self
    }

    /// Sets (or removes) the price table.
    pub fn with_prices(mut self, prices: Option<Arc<PriceTable>>) -> Self {
        self.prices = prices;
        self
    }

    /// `{base_url}/{path}`, checked to be an http(s) URL.
    pub(crate) fn url(&self, path: &str) -> Result<String, ModelError> {
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(ModelError::Config(format!(
                "base URL {:?} is not an http:// or https:// URL (expected e.g. http://localhost:8000/v1)",
                self.base_url
            )));
        }
        Ok(format!(
            "{}/{}",
            self.base_url,
            path.trim_start_matches('/')
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn chorus_variable_wins_over_openai_one() {
        let config = EndpointConfig::from_lookup(vars(&[
            (OPENAI_BASE_URL_VAR, "http://openai.example/v1"),
            (BASE_URL_VAR, "http://127.0.0.1:8000/v1/"),
            (API_KEY_VAR, "sk-test"),
        ]))
        .unwrap();
        assert_eq!(config.base_url, "http://127.0.0.1:8000/v1");
        assert_eq!(config.api_key.as_deref(), Some("sk-test"));
        let fallback =
            EndpointConfig::from_lookup(vars(&[(OPENAI_BASE_URL_VAR, "http://a/v1")])).unwrap();
        assert_eq!(fallback.base_url, "http://a/v1");
        assert_eq!(fallback.api_key, None);
    }

    #[test]
    fn reasoning_families_take_max_completion_tokens() {
        for model in [
            "o1",
            "o1-mini",
            "o3-2025-04-16",
            "o4-mini",
            "gpt-5",
            "gpt-5.1",
            "gpt-5-nano",
            "openai/o3",
        ] {
            assert_eq!(
                MaxTokensField::for_model(model),
                MaxTokensField::MaxCompletionTokens,
                "{model}"
            );
        }
        for model in [
            "gpt-4o",
            "gpt-4.1-mini",
            "qwen3-8b",
            "o1x",
            "llama-o1",
            "gpt-oss-20b",
        ] {
            assert_eq!(
                MaxTokensField::for_model(model),
                MaxTokensField::MaxTokens,
                "{model}"
            );
        }
        let forced = EndpointConfig::new("http://a/v1")
            .with_max_tokens_field(MaxTokensField::MaxCompletionTokens);
        assert_eq!(forced.max_tokens_key("qwen3-8b"), "max_completion_tokens");
    }

    #[test]
    fn the_idle_timeout_comes_from_the_environment() {
        let config = EndpointConfig::from_lookup(vars(&[
            (BASE_URL_VAR, "http://a/v1"),
            (IDLE_TIMEOUT_VAR, "2.5"),
        ]))
        .unwrap();
        assert_eq!(config.idle_timeout, Duration::from_millis(2500));
        let bad = EndpointConfig::from_lookup(vars(&[
            (BASE_URL_VAR, "http://a/v1"),
            (IDLE_TIMEOUT_VAR, "soon"),
        ]))
        .unwrap_err();
        assert!(bad.to_string().contains(IDLE_TIMEOUT_VAR), "{bad}");
    }

    #[test]
    fn missing_or_bad_base_url_is_a_clear_error() {
        let missing = EndpointConfig::from_lookup(vars(&[])).unwrap_err();
        assert!(missing.to_string().contains(BASE_URL_VAR), "{missing}");
        let bad = EndpointConfig::new("localhost:8000").url("completions");
        assert!(bad.unwrap_err().to_string().contains("http://"));
    }
}
