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

/// Endpoint, credentials, retries, timeout and prices shared by the model clients.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Base URL up to and including the API version, e.g. `http://localhost:8000/v1`.
    pub base_url: String,
    /// Bearer token, if the endpoint wants one.
    pub api_key: Option<String>,
    /// Longest time one attempt may take, from sending the request to the last byte.
    pub timeout: Duration,
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
    /// A configuration for `base_url` with no key, a 300 s timeout per attempt (local models
    /// reasoning at length are slow), 4 attempts from 500 ms backoff up to 20 s, and the
    /// built-in price table.
    pub fn new(base_url: impl Into<String>) -> Self {
        EndpointConfig {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            api_key: None,
            timeout: Duration::from_secs(300),
            max_attempts: 4,
            backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
            prices: Some(PriceTable::builtin()),
        }
    }

    /// Reads the base URL from `CHORUS_MODEL_BASE_URL`, else `OPENAI_BASE_URL`, and the key
    /// from `OPENAI_API_KEY`.
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
        Ok(config)
    }

    /// Sets the API key.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets the per-attempt timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
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
    fn missing_or_bad_base_url_is_a_clear_error() {
        let missing = EndpointConfig::from_lookup(vars(&[])).unwrap_err();
        assert!(missing.to_string().contains(BASE_URL_VAR), "{missing}");
        let bad = EndpointConfig::new("localhost:8000").url("completions");
        assert!(bad.unwrap_err().to_string().contains("http://"));
    }
}
