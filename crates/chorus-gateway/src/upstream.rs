//! The upstream engine: the prompt posted to `{upstream}/completions` (vLLM, SGLang: token
//! ids), `{upstream}/completion` (llama.cpp: token ids) or `{upstream}/api/generate` (Ollama:
//! text, `raw: true`), always streamed, so that the reply is parsed token by token and a silent
//! upstream is noticed. `<|return|>` and `<|call|>` stop it, and special tokens stay in its text
//! (or come as token ids).

use std::pin::Pin;
use std::time::Duration;

use axum::http::StatusCode;
use chorus_harmony::{CompletionTokens, Rank, tokens};
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use serde_json::{Map, Value, json};

use crate::config::{GatewayConfig, UpstreamKind};
use crate::error::ApiError;

/// A client of the upstream.
#[derive(Debug, Clone)]
pub struct Upstream {
    http: reqwest::Client,
    kind: UpstreamKind,
    url: String,
    key: Option<String>,
    model: String,
    first_byte: Duration,
    idle: Duration,
}

type Events = Pin<Box<dyn Stream<Item = Result<Event, EventStreamError<reqwest::Error>>> + Send>>;
type Bytes = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// JSON lines as they arrive (Ollama's stream).
struct Lines {
    bytes: Bytes,
    pending: Vec<u8>,
}

impl Lines {
    /// The next non-empty line; `None` at the end.
    async fn next(&mut self) -> Option<Result<String, reqwest::Error>> {
        loop {
            if let Some(at) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=at).collect();
                let line = String::from_utf8_lossy(&line).trim().to_owned();
                if line.is_empty() {
                    continue;
                }
                return Some(Ok(line));
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => self.pending.extend_from_slice(&chunk),
                Some(Err(e)) => return Some(Err(e)),
                None if self.pending.iter().all(u8::is_ascii_whitespace) => return None,
                None => {
                    let line = String::from_utf8_lossy(&self.pending).trim().to_owned();
                    self.pending.clear();
                    return Some(Ok(line));
                }
            }
        }
    }
}

/// One reply being read.
pub struct Streamed {
    events: Option<Events>,
    lines: Option<Lines>,
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
            kind: config.upstream_kind,
            url: format!(
                "{}/{}",
                config.upstream.trim_end_matches('/'),
                config.upstream_kind.path()
            ),
            key,
            model: config.model.clone(),
            first_byte: config.first_byte_timeout(),
            idle: config.idle_timeout(),
        })
    }

    /// The completions request for `prompt` with the client's sampling settings, in the
    /// upstream's own field names.
    pub fn body(&self, prompt: &[Rank], sampling: &Map<String, Value>) -> Result<Value, ApiError> {
        let stop = json!(["<|return|>", "<|call|>"]);
        match self.kind {
            UpstreamKind::OpenaiCompletions => {}
            UpstreamKind::LlamaCpp => {
                let mut body = json!({
                    "prompt": prompt,
                    "stream": true,
                    "return_tokens": true,
                    "stop": stop,
                    "cache_prompt": true,
                });
                for (key, value) in sampling {
                    let key = if key == "max_tokens" {
                        "n_predict"
                    } else {
                        key.as_str()
                    };
                    body[key] = value.clone();
                }
                return Ok(body);
            }
            UpstreamKind::Ollama => {
                let text = chorus_harmony::encoding()
                    .decode_utf8(prompt)
                    .map_err(|e| {
                        ApiError::upstream(
                            "prompt_not_text",
                            format!("the prompt cannot be written as text for Ollama: {e}"),
                            None,
                        )
                    })?;
                let mut options = json!({"stop": stop});
                for (key, value) in sampling {
                    let key = if key == "max_tokens" {
                        "num_predict"
                    } else {
                        key.as_str()
                    };
                    options[key] = value.clone();
                }
                return Ok(json!({
                    "model": self.model,
                    "prompt": text,
                    "raw": true,
                    "stream": true,
                    "options": options,
                }));
            }
        }
        let mut body = json!({
            "model": self.model,
            "prompt": prompt,
            "stream": true,
            "stream_options": {"include_usage": true},
            "skip_special_tokens": false,
            "stop_token_ids": [tokens::RETURN, tokens::CALL],
            "stop": stop,
        });
        if let Some(map) = body.as_object_mut() {
            map.extend(sampling.clone());
        }
        Ok(body)
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
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let is_stream = content_type.starts_with("text/event-stream");
        let is_lines =
            self.kind == UpstreamKind::Ollama || content_type.starts_with("application/x-ndjson");
        let mut streamed = Streamed {
            events: None,
            lines: None,
            whole: None,
            idle: self.idle,
            reader: CompletionTokens::new(),
            finish_reason: None,
            usage: None,
        };
        if is_stream {
            streamed.events = Some(Box::pin(response.bytes_stream().eventsource()));
        } else if is_lines {
            streamed.lines = Some(Lines {
                bytes: Box::pin(response.bytes_stream()),
                pending: Vec::new(),
            });
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
        if self.lines.is_some() {
            return self.next_line().await;
        }
        loop {
            let Some(events) = self.events.as_mut() else {
                return Ok(None);
            };
            let event = match tokio::time::timeout(self.idle, events.next()).await {
                Err(_) => return Err(silent(self.idle)),
                Ok(None) => {
                    self.events = None;
                    return Ok(self.rest());
                }
                Ok(Some(Err(e))) => return Err(broken(e)),
                Ok(Some(Ok(event))) => event,
            };
            let data = event.data.trim();
            if data == "[DONE]" {
                self.events = None;
                return Ok(self.rest());
            }
            if data.is_empty() {
                continue;
            }
            let tokens = self.read_chunk(data)?;
            if !tokens.is_empty() {
                return Ok(Some(tokens));
            }
        }
    }

    /// The next tokens of a JSON-lines reply.
    async fn next_line(&mut self) -> Result<Option<Vec<Rank>>, ApiError> {
        loop {
            let Some(lines) = self.lines.as_mut() else {
                return Ok(None);
            };
            let line = match tokio::time::timeout(self.idle, lines.next()).await {
                Err(_) => return Err(silent(self.idle)),
                Ok(None) => {
                    self.lines = None;
                    return Ok(self.rest());
                }
                Ok(Some(Err(e))) => return Err(broken(e)),
                Ok(Some(Ok(line))) => line,
            };
            let tokens = self.read_chunk(&line)?;
            if !tokens.is_empty() {
                return Ok(Some(tokens));
            }
        }
    }

    /// The tokens held back at the end of the reply, if any.
    fn rest(&mut self) -> Option<Vec<Rank>> {
        let rest = self.reader.finish();
        (!rest.is_empty()).then_some(rest)
    }

    /// Reads one chunk (an SSE event's data or a JSON line): an error the upstream sent in its
    /// stream is an error; its finish reason and usage are kept; its tokens come back.
    fn read_chunk(&mut self, data: &str) -> Result<Vec<Rank>, ApiError> {
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
        self.chunk_tokens(&chunk)
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

    /// Keeps the finish reason and the usage, in whichever engine's words they come:
    /// `finish_reason` and `usage` (OpenAI), `stop_type` and `tokens_predicted` (llama.cpp),
    /// `done_reason` and `eval_count` (Ollama).
    fn note(&mut self, chunk: &Value) {
        let reason = chunk
            .pointer("/choices/0/finish_reason")
            .or_else(|| chunk.get("done_reason"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| match chunk.get("stop_type").and_then(Value::as_str) {
                Some("limit") => Some("length".into()),
                Some("none") | None => None,
                Some(_) => Some("stop".into()),
            });
        if reason.is_some() {
            self.finish_reason = reason;
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let generated = chunk
            .get("eval_count")
            .or_else(|| chunk.get("tokens_predicted"))
            .and_then(Value::as_u64);
        if let Some(n) = generated {
            self.usage = Some(json!({"completion_tokens": n}));
        }
    }
}

fn broken(e: impl std::fmt::Display) -> ApiError {
    ApiError::upstream(
        "upstream_broken",
        format!("the upstream's stream broke off: {e}"),
        None,
    )
}

fn silent(idle: Duration) -> ApiError {
    ApiError::status(
        StatusCode::GATEWAY_TIMEOUT,
        "upstream_error",
        "upstream_silent",
        format!("the upstream fell silent for {} s", idle.as_secs()),
    )
}
