//! Sending a request with retries, backoff and timeouts (to the response's start, and of silence
//! in a streamed body); reading the JSON chunks of server-sent events.

use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::ModelError;
use super::config::EndpointConfig;
use crate::sse::{SseError, SseReader};

/// Why one attempt failed, and whether another may succeed.
pub(crate) enum Failure {
    /// Worth another attempt (429, 5xx, connection refused or reset), after `after` if the
    /// server said so.
    Retry {
        error: ModelError,
        after: Option<Duration>,
    },
    /// Not worth retrying.
    Fatal(ModelError),
}

impl From<ModelError> for Failure {
    fn from(error: ModelError) -> Self {
        Failure::Fatal(error)
    }
}

/// Runs `attempt` until it succeeds, fails fatally, times out or runs out of attempts.
pub(crate) async fn with_retries<T, F, Fut>(
    config: &EndpointConfig,
    mut attempt: F,
) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let attempts = config.max_attempts.max(1);
    let mut number = 1;
    loop {
        let (error, after) = match attempt().await {
            Ok(value) => return Ok(value),
            Err(Failure::Fatal(error)) => return Err(error),
            Err(Failure::Retry { error, after }) => (error, after),
        };
        if number >= attempts {
            return Err(error);
        }
        let delay = after
            .unwrap_or_else(|| backoff(config.backoff, number))
            .min(config.max_backoff);
        tracing::debug!(attempt = number, ?delay, %error, "model call retried");
        tokio::time::sleep(delay).await;
        number += 1;
    }
}

/// Exponential backoff with jitter: `base · 2^(n-1)`, scaled by a random factor in [0.5, 1].
fn backoff(base: Duration, retry: u32) -> Duration {
    let full = base.saturating_mul(1u32 << (retry - 1).min(16));
    let random = RandomState::new().hash_one(retry) % 1000;
    full.mul_f64(0.5 + random as f64 / 2000.0)
}

/// Posts `body` as JSON to `path`, waiting at most `config.timeout` for the response to start;
/// statuses 429 and 5xx and connection failures are retryable (a timeout is not).
pub(crate) async fn post(
    http: &reqwest::Client,
    config: &EndpointConfig,
    path: &str,
    body: &Value,
) -> Result<reqwest::Response, Failure> {
    let url = config.url(path)?;
    let mut request = http.post(&url).json(body);
    if let Some(key) = &config.api_key {
        request = request.bearer_auth(key);
    }
    let response = tokio::time::timeout(config.timeout, request.send())
        .await
        .map_err(|_| ModelError::Timeout(config.timeout.as_millis() as u64))?
        .map_err(|e| Failure::Retry {
            error: ModelError::Transport(format!("POST {url}: {e}")),
            after: None,
        })?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let after = retry_after(response.headers());
    let text = response.text().await.unwrap_or_default();
    let error = ModelError::Status {
        status: status.as_u16(),
        body: error_text(&url, status, &text),
    };
    if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        Err(Failure::Retry { error, after })
    } else {
        Err(Failure::Fatal(error))
    }
}

/// The server's error message, with the URL and a hint for the common statuses.
fn error_text(url: &str, status: StatusCode, body: &str) -> String {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .or_else(|| v.pointer("/error"))
                .or_else(|| v.pointer("/message"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| body.chars().take(500).collect());
    let hint = match status.as_u16() {
        401 | 403 => " (hint: check OPENAI_API_KEY)",
        404 => " (hint: the base URL usually ends in /v1; check the model name)",
        _ => "",
    };
    format!("{message} [POST {url}]{hint}")
}

/// `Retry-After`: seconds, or an HTTP date (a date in the past means now).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<f64>() {
        // A value past what a Duration holds (`1e20`) is refused, not a panic.
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    Some(
        (at.to_utc() - chrono::Utc::now())
            .to_std()
            .unwrap_or_default(),
    )
}

/// Whether the response is a stream of server-sent events (rather than one JSON body).
pub(crate) fn is_event_stream(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The whole JSON body of a response that is not a stream, within `config.timeout`.
pub(crate) async fn json_body(
    response: reqwest::Response,
    config: &EndpointConfig,
) -> Result<Value, ModelError> {
    tokio::time::timeout(config.timeout, response.json::<Value>())
        .await
        .map_err(|_| ModelError::Timeout(config.timeout.as_millis() as u64))?
        .map_err(|e| {
            ModelError::Protocol(format!("the response is neither a stream nor JSON: {e}"))
        })
}

/// Reads the JSON `data:` payloads of a server-sent events body until `[DONE]`, on the shared
/// [`SseReader`]; the stream fails when no byte arrives for `config.idle_timeout`.
pub(crate) struct ChunkReader {
    events: SseReader,
    done: bool,
}

impl ChunkReader {
    /// Starts reading `response`.
    pub(crate) fn new(response: reqwest::Response, config: &EndpointConfig) -> Self {
        ChunkReader {
            events: SseReader::response(response, Some(config.idle_timeout)),
            done: false,
        }
    }

    /// The next event's JSON payload; `None` after `[DONE]` or the end of the body. A payload
    /// with an `error` object, or an event of type `error` (sent mid-stream by some servers),
    /// becomes an error.
    pub(crate) async fn next(&mut self) -> Result<Option<Value>, Failure> {
        if self.done {
            return Ok(None);
        }
        let Some(event) = self.events.next().await else {
            self.done = true;
            return Ok(None);
        };
        let event = event.map_err(|e| {
            Failure::Fatal(match e {
                SseError::Idle(idle) => ModelError::Timeout(idle.as_millis() as u64),
                other => ModelError::Transport(other.to_string()),
            })
        })?;
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        if event.event == "error" {
            return Err(Failure::Fatal(ModelError::Protocol(format!(
                "the stream reported an error: {data:.500}"
            ))));
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::Protocol(format!("an event is not JSON ({e}): {data:.200}"))
        })?;
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            return Err(Failure::Fatal(ModelError::Protocol(format!(
                "the stream reported an error: {error}"
            ))));
        }
        Ok(Some(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_jitter() {
        let base = Duration::from_millis(100);
        for retry in 1..5 {
            let full = base * (1 << (retry - 1));
            let delay = backoff(base, retry);
            assert!(delay >= full / 2 && delay <= full, "{retry}: {delay:?}");
        }
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::RETRY_AFTER, "2".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        for odd in ["1e20", "-1", "NaN", "inf"] {
            let mut h = reqwest::header::HeaderMap::new();
            h.insert(reqwest::header::RETRY_AFTER, odd.parse().unwrap());
            assert_eq!(retry_after(&h), None, "{odd}");
        }
        headers.insert(reqwest::header::RETRY_AFTER, "soon".parse().unwrap());
        assert_eq!(retry_after(&headers), None);
        let later = (chrono::Utc::now() + chrono::Duration::seconds(30)).to_rfc2822();
        headers.insert(reqwest::header::RETRY_AFTER, later.parse().unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(25) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        headers.insert(
            reqwest::header::RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
    }

    #[test]
    fn error_text_takes_the_openai_message_and_hints() {
        let text = error_text(
            "http://x/v1/chat/completions",
            StatusCode::UNAUTHORIZED,
            r#"{"error":{"message":"bad key"}}"#,
        );
        assert!(text.starts_with("bad key"), "{text}");
        assert!(text.contains("OPENAI_API_KEY"), "{text}");
    }
}
