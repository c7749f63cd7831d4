//! The gateway's settings: the `[gateway]` section of `chorus.toml`, and the command line over it.

use std::time::Duration;

use serde::Deserialize;
use sha2::{Digest, Sha256};

/// How the gateway runs.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// Where the gateway listens, HOST:PORT (`chorus gateway --listen` over it; default
    /// 127.0.0.1:8080). With a `[gateway]` section, `chorus serve` serves the gateway there too.
    pub listen: Option<String>,
    /// The upstream engine's base URL, up to `/v1` (`http://127.0.0.1:8000/v1`).
    pub upstream: String,
    /// The kind of upstream: `openai-completions` (vLLM, SGLang: `POST {upstream}/completions`),
    /// `llama-cpp` (`POST {upstream}/completion`), `ollama` (`POST {upstream}/api/generate`).
    pub upstream_kind: UpstreamKind,
    /// The model name sent upstream; also the one `/v1/models` lists.
    pub model: String,
    /// A file holding the upstream's API key (sent as `Authorization: Bearer`).
    pub upstream_key_file: Option<String>,
    /// The clients' API keys, as SHA-256 hex digests (`sha256:...` or bare hex); empty: no key
    /// is asked for.
    pub api_key_hashes: Vec<String>,
    /// Turn every repair of the model's output into a 502.
    pub strict: bool,
    /// The largest request body, bytes.
    pub max_body_bytes: usize,
    /// Generations served at once (a request of `n` choices takes `n`); more get 429.
    pub max_concurrent: usize,
    /// Seconds to wait for the upstream's answer to start.
    pub first_byte_timeout_secs: u64,
    /// Seconds of silence inside a streamed answer before it is given up (not a bound on its
    /// total length).
    pub idle_timeout_secs: u64,
    /// The system message's knowledge cutoff (`Knowledge cutoff:`).
    pub knowledge_cutoff: String,
    /// The system message's date (`Current date:`); empty: today's date (UTC) per request.
    pub date: String,
    /// Responses of `/v1/responses` kept in memory for `previous_response_id` and `GET`, at
    /// most (the oldest go first; 0 keeps none).
    pub max_stored_responses: usize,
}

/// What the upstream speaks.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum UpstreamKind {
    /// OpenAI-style `POST /completions` with the prompt as token ids (vLLM, SGLang).
    #[default]
    OpenaiCompletions,
    /// llama.cpp server's `POST /completion`, the prompt as token ids, the reply's token ids
    /// asked for (`return_tokens`).
    LlamaCpp,
    /// Ollama's `POST /api/generate` with `raw: true`, the prompt as text (Ollama takes no
    /// token ids), the reply read from its JSON lines.
    Ollama,
}

impl UpstreamKind {
    /// The kind named `name` (as in the config).
    pub fn from_name(name: &str) -> Option<UpstreamKind> {
        match name {
            "openai-completions" => Some(UpstreamKind::OpenaiCompletions),
            "llama-cpp" => Some(UpstreamKind::LlamaCpp),
            "ollama" => Some(UpstreamKind::Ollama),
            _ => None,
        }
    }

    /// The path after the upstream's base URL.
    pub fn path(self) -> &'static str {
        match self {
            UpstreamKind::OpenaiCompletions => "completions",
            UpstreamKind::LlamaCpp => "completion",
            UpstreamKind::Ollama => "api/generate",
        }
    }
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: None,
            upstream: String::new(),
            upstream_kind: UpstreamKind::default(),
            model: "gpt-oss".into(),
            upstream_key_file: None,
            api_key_hashes: Vec::new(),
            strict: false,
            max_body_bytes: 4 * 1024 * 1024,
            max_concurrent: 256,
            first_byte_timeout_secs: 120,
            idle_timeout_secs: 60,
            knowledge_cutoff: "2024-06".into(),
            date: String::new(),
            max_stored_responses: 10_000,
        }
    }
}

impl GatewayConfig {
    /// The time the upstream may take to start answering.
    pub fn first_byte_timeout(&self) -> Duration {
        Duration::from_secs(self.first_byte_timeout_secs.max(1))
    }

    /// The silence a streamed answer may keep.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs.max(1))
    }

    /// Checks the settings that cannot be used as they are.
    pub fn check(&self) -> Result<(), String> {
        if self.upstream.is_empty() {
            return Err("no upstream (hint: --upstream http://127.0.0.1:8000/v1, or `upstream` in [gateway])".into());
        }
        let url = reqwest::Url::parse(&self.upstream)
            .map_err(|e| format!("upstream {:?} is not a URL: {e}", self.upstream))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "upstream {:?}: the scheme must be http or https",
                self.upstream
            ));
        }
        for hash in &self.api_key_hashes {
            let hex = hash.strip_prefix("sha256:").unwrap_or(hash);
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!(
                    "api_key_hashes: {hash:?} is not a SHA-256 hex digest (hint: `chorus gateway --hash-key` prints one)"
                ));
            }
        }
        if self.max_concurrent == 0 {
            return Err("max_concurrent must be at least 1".into());
        }
        Ok(())
    }
}

/// The SHA-256 hex digest of an API key, as `api_key_hashes` holds it.
pub fn hash_key(key: &str) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(key.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_reads_and_is_checked() {
        let config: GatewayConfig = toml::from_str(
            "upstream = \"http://127.0.0.1:8000/v1\"\nmodel = \"gpt-oss-20b\"\nstrict = true\n",
        )
        .unwrap();
        assert_eq!(config.model, "gpt-oss-20b");
        assert!(config.strict);
        assert!(config.check().is_ok());
        let unknown = toml::from_str::<GatewayConfig>("upstrem = \"x\"").unwrap_err();
        assert!(unknown.to_string().contains("upstrem"), "{unknown}");
        let none = GatewayConfig::default().check().unwrap_err();
        assert!(none.contains("--upstream"), "{none}");
        let bad = GatewayConfig {
            upstream: "ftp://x".into(),
            ..GatewayConfig::default()
        };
        assert!(bad.check().unwrap_err().contains("scheme"));
        let key = GatewayConfig {
            upstream: "http://x".into(),
            api_key_hashes: vec!["abc".into()],
            ..GatewayConfig::default()
        };
        assert!(key.check().unwrap_err().contains("SHA-256"));
    }

    #[test]
    fn a_key_hash_is_sha256_hex() {
        assert_eq!(
            hash_key("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
