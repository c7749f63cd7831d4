//! The upstream engine: a prompt of token ids posted to `{upstream}/completions` (vLLM,
//! SGLang), always streamed, so that the reply is parsed token by token and a silent upstream
//! is noticed. `<|return|>` and `<|call|>` stop it, and special tokens stay in its text.

use std::pin::Pin;
use std::time::Duration;

use axum::http::StatusCode;
use chorus_harmony::{CompletionTokens, Rank, tokens};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::{Map, Value, json};

use crate::config::GatewayConfig;
use crate::error::ApiError;

/// A client of the upstream.
#[derive(Debug, Clone)]
pub struct Upstream {
    http: reqwest::Client,
    url: String,
    key: Option<String>,
    model: String,
    first_byte: Duration,
    idle: Duration,
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;

/// One reply being read.
pub struct Streamed {
    events: Option<Events>,
    whole: Option<Value>,
    idle: Duration,
    reader: CompletionTokens,
    /// The upstream's `finish_reason`, once sent.
    pub finish_reason: Option<String>,
    /// The upstream's usage, once sent.
    pub usage: Option<Value>,
}

impl Upstream {
    /// A client for `config`'s upstream, with its key read from `upstream_key_file`.
    pub fn new(config: &GatewayConfig) -> Result<Self, String> {
        let key = match &config.upstream_key_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| format!("upstream_key_file {path}: {e}"))?
                    .trim()
                    .to_owned(),
            ),
            None => None,
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| format!("cannot make the HTTP client: {e}"))?;
        Ok(Upstream {
            http,
            url: format!("{}/completions", config.upstream.trim_end_matches('/')),
            key,
            model: config.model.clone(),
            first_byte: config.first_byte_timeout(),
            idle: config.idle_timeout(),
        })
    }

    /// The completions request for `prompt` with the client's sampling settings.
    pub fn body(&self, prompt: &[Rank], sampling: &Map<String, Value>) -> Value {
        let mut body = json!({
            "model": self.model,
            "prompt": prompt,
            "stream": true,
            "stream_options": {"include_usage": true},
            "skip_special_tokens": false,
            "stop_token_ids": [tokens::RETURN, tokens::CALL],
            "stop": ["<|return|>", "<|call|>"],
        });
        if let Some(map) = body.as_object_mut() {
            map.extend(sampling.clone());
        }
        body
    }

    /// Sends the request and waits for the answer to start.
    pub async fn open(&self, body: &Value) -> Result<Streamed, ApiError> {
        let mut request = self.http.post(&self.url).json(body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = match tokio::time::timeout(self.first_byte, request.send()).await {
            Err(_) => {
                return Err(ApiError::status(
                    StatusCode::GATEWAY_TIMEOUT,
                    "upstream_error",
                    "upstream_timeout",
                    format!(
                        "the upstream did not answer within {} s",
                        self.first_byte.as_secs()
                    ),
                ));
            }
            Ok(Err(e)) => {
                return Err(ApiError::upstream(
                    "upstream_unreachable",
                    format!("cannot reach the upstream {}: {e}", self.url),
                    None,
                ));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(refused(status, text));
        }
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut streamed = Streamed {
            events: None,
            whole: None,
            idle: self.idle,
            reader: CompletionTokens::new(),
            finish_reason: None,
            usage: None,
        };
        if is_stream {
            streamed.events = Some(Box::pin(response.bytes_stream().eventsource()));
        } else {
            let text = response.text().await.map_err(|e| {
                ApiError::upstream(
                    "upstream_broken",
                    format!("the upstream's answer broke off: {e}"),
                    None,
                )
            })?;
            let value: Value = serde_json::from_str(&text).map_err(|e| {
                ApiError::upstream(
                    "upstream_unreadable",
                    format!("the upstream's answer is not JSON: {e}"),
                    Some(text.clone()),
                )
            })?;
            streamed.whole = Some(value);
        }
        Ok(streamed)
    }
}

/// The error for an upstream's refusal: its 400 stays a 400 (a prompt too long for the
/// engine's context is the client's to fix), its 429 a 429, the rest a 502.
fn refused(status: StatusCode, text: String) -> ApiError {
    let message = format!(
        "the upstream answered {status}: {}",
        text.chars().take(2000).collect::<String>()
    );
    match status.as_u16() {
        400 | 422 => {
            let mut e = ApiError::status(
                StatusCode::BAD_REQUEST,
                "invalid_request_error",
                "upstream_rejected",
                message,
            );
            e.extra = Some(Box::new(json!({"raw": text})));
            e
        }
        429 => {
            let mut e = ApiError::status(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                "upstream_busy",
                message,
            );
            e.retry_after = Some(1);
            e
        }
        _ => ApiError::upstream("upstream_failed", message, Some(text)),
    }
}

impl Streamed {
    /// The next tokens of the reply; `None` at its end.
    pub async fn next(&mut self) -> Result<Option<Vec<Rank>>, ApiError> {
        if let Some(whole) = self.whole.take() {
            self.note(&whole);
            let mut tokens = self.chunk_tokens(&whole)?;
            tokens.extend(self.reader.finish());
            return Ok(Some(tokens));
        }
        loop {
            let Some(events) = self.events.as_mut() else {
                return Ok(None);
            };
            let event = match tokio::time::timeout(self.idle, events.next()).await {
                Err(_) => {
                    return Err(ApiError::status(
                        StatusCode::GATEWAY_TIMEOUT,
                        "upstream_error",
                        "upstream_silent",
                        format!("the upstream fell silent for {} s", self.idle.as_secs()),
                    ));
                }
                Ok(None) => {
                    self.events = None;
                    let rest = self.reader.finish();
                    return Ok((!rest.is_empty()).then_some(rest));
                }
                Ok(Some(Err(e))) => {
                    return Err(ApiError::upstream(
                        "upstream_broken",
                        format!("the upstream's stream broke off: {e}"),
                        None,
                    ));
                }
                Ok(Some(Ok(event))) => event,
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                self.events = None;
                let rest = self.reader.finish();
                return Ok((!rest.is_empty()).then_some(rest));
            }
            if data.is_empty() {
                continue;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                ApiError::upstream(
                    "upstream_unreadable",
                    format!("an upstream chunk is not JSON: {e}"),
                    Some(data.to_owned()),
                )
            })?;
            if let Some(error) = chunk.get("error") {
                return Err(ApiError::upstream(
                    "upstream_failed",
                    "the upstream sent an error in its stream",
                    Some(error.to_string()),
                ));
            }
            self.note(&chunk);
            let tokens = self.chunk_tokens(&chunk)?;
            if !tokens.is_empty() {
                return Ok(Some(tokens));
            }
        }
    }

    fn chunk_tokens(&mut self, chunk: &Value) -> Result<Vec<Rank>, ApiError> {
        self.reader.chunk(chunk).map_err(|e| {
            ApiError::upstream(
                "upstream_unreadable",
                e.to_string(),
                Some(chunk.to_string()),
            )
        })
    }

    fn note(&mut self, chunk: &Value) {
        if let Some(reason) = chunk
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
        {
            self.finish_reason = Some(reason.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
    }
}
