//! The remote A2A agent over JSON-RPC (A2A v1.0): its card read once for the endpoint (and
//! whether it streams), then `SendMessage`, `SendStreamingMessage` and `GetTask` with the bearer
//! token.

use std::time::Duration;

use serde_json::{Value, json};

/// The card of a remote agent and where its JSON-RPC endpoint is.
#[derive(Clone)]
pub struct Remote {
    http: reqwest::Client,
    card_url: String,
    token: Option<String>,
    endpoint: tokio::sync::OnceCell<Endpoint>,
}

/// What the card says about reaching the agent.
#[derive(Debug, Clone)]
struct Endpoint {
    /// The JSON-RPC URL.
    url: String,
    /// `capabilities.streaming`.
    streaming: bool,
}

impl std::fmt::Debug for Remote {
    // Written by hand: the bearer token stays out of logs and panics.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("card_url", &self.card_url)
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

impl Remote {
    /// A remote agent whose card is at `card_url`; `token` is sent as `Authorization: Bearer`.
    pub fn new(card_url: &str, token: Option<String>, timeout: Duration) -> Remote {
        Remote {
            http: reqwest::Client::builder()
                .timeout(timeout)
                .build()
                .unwrap_or_default(),
            card_url: card_url.to_owned(),
            token,
            endpoint: tokio::sync::OnceCell::new(),
        }
    }

    /// The JSON-RPC URL of the card's first `JSONRPC` interface, and whether it streams (read
    /// once).
    async fn endpoint(&self) -> Result<&Endpoint, String> {
        self.endpoint
            .get_or_try_init(|| async {
                let card: Value = self
                    .http
                    .get(&self.card_url)
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .map_err(|e| format!("the agent card at {}: {e}", self.card_url))?
                    .json()
                    .await
                    .map_err(|e| format!("the agent card at {} is not JSON: {e}", self.card_url))?;
                let streaming = card.pointer("/capabilities/streaming") == Some(&Value::Bool(true));
                let url = endpoint_of(&card).ok_or_else(|| {
                    format!(
                        "the agent card at {} lists no JSONRPC interface in supportedInterfaces \
                         (chorus speaks A2A v1.0 over JSON-RPC)",
                        self.card_url
                    )
                })?;
                // The bearer token goes only where the card came from: a card naming another
                // origin would send it to whoever wrote that card.
                if origin(&url) != origin(&self.card_url) {
                    return Err(format!(
                        "the agent card at {} names its JSON-RPC endpoint {url:?} on another \
                         origin; chorus sends the token only to the card's own origin",
                        self.card_url
                    ));
                }
                Ok(Endpoint { url, streaming })
            })
            .await
    }

    /// True when the card says the agent streams.
    pub async fn streams(&self) -> Result<bool, String> {
        Ok(self.endpoint().await?.streaming)
    }

    fn request(&self, url: &str, method: &str, params: Value) -> reqwest::RequestBuilder {
        let request = json!({"jsonrpc": "2.0", "id": uuid::Uuid::new_v4().to_string(),
            "method": method, "params": params});
        let builder = self
            .http
            .post(url)
            .header("A2A-Version", "1.0")
            .json(&request);
        match &self.token {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    /// Calls a streaming `method`; the `result` of each event, in order, to `each` until it says
    /// stop (false) or the stream ends.
    pub async fn stream(
        &self,
        method: &str,
        params: Value,
        mut each: impl FnMut(&Value) -> bool,
    ) -> Result<(), String> {
        let url = self.endpoint().await?.url.clone();
        let response = self
            .request(&url, method, params)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| format!("{method} to {url}: {e}"))?;
        let is_stream = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_stream {
            // A refusal comes as one JSON-RPC answer, not as a stream.
            let body: Value = response
                .json()
                .await
                .map_err(|e| format!("{method} to {url}: neither a stream nor JSON: {e}"))?;
            each(&rpc_result(method, &url, body)?);
            return Ok(());
        }
        let mut events = crate::sse::SseReader::response(response, None);
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| format!("{method} to {url}: the stream broke: {e}"))?;
            let body: Value = serde_json::from_str(&event.data)
                .map_err(|e| format!("{method} to {url}: an event that is not JSON: {e}"))?;
            if !each(&rpc_result(method, &url, body)?) {
                break;
            }
        }
        Ok(())
    }

    /// Calls `method` with `params`; the `result`, or the error said in words.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let url = self.endpoint().await?.url.clone();
        let response = self
            .request(&url, method, params)
            .send()
            .await
            .map_err(|e| format!("{method} to {url}: {e}"))?;
        let status = response.status();
        let body: Value = response.json().await.map_err(|e| {
            format!("{method} to {url}: HTTP {status}, the answer is not JSON: {e}")
        })?;
        rpc_result(method, &url, body)
    }
}

/// The scheme, host and port of `url` (`None` when it is no URL).
fn origin(url: &str) -> Option<(String, String, Option<u16>)> {
    let url = reqwest::Url::parse(url).ok()?;
    Some((
        url.scheme().to_owned(),
        url.host_str()?.to_ascii_lowercase(),
        url.port_or_known_default(),
    ))
}

/// The `result` of a JSON-RPC answer, or its error in words.
fn rpc_result(method: &str, url: &str, body: Value) -> Result<Value, String> {
    if let Some(error) = body.get("error") {
        return Err(format!(
            "{method} to {url}: error {}: {}",
            error.get("code").unwrap_or(&Value::Null),
            // The peer's text, escaped: it reaches logs and the task's story.
            error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .escape_debug()
        ));
    }
    body.get("result")
        .cloned()
        .ok_or_else(|| format!("{method} to {url}: an answer with neither result nor error"))
}

/// The URL of a card's first JSON-RPC interface.
fn endpoint_of(card: &Value) -> Option<String> {
    card.get("supportedInterfaces")?
        .as_array()?
        .iter()
        .find(|i| i.get("protocolBinding").and_then(Value::as_str) == Some("JSONRPC"))?
        .get("url")?
        .as_str()
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_rpc_interface_is_found_among_others() {
        let card = json!({"supportedInterfaces": [
            {"url": "http://h/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
        assert_eq!(endpoint_of(&card).as_deref(), Some("http://h/rpc"));
        assert_eq!(endpoint_of(&json!({"url": "http://h/"})), None);
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(origin("http://H:80/a"), origin("http://h/b"));
        assert_ne!(origin("http://h/a"), origin("https://h/a"));
        assert_ne!(origin("http://h:8080/a"), origin("http://h/a"));
        assert_ne!(origin("http://h/a"), origin("http://evil.example/a"));
        assert_eq!(origin("not a url"), None);
        let remote = Remote::new(
            "http://h/card",
            Some("secret".into()),
            Duration::from_secs(1),
        );
        assert!(!format!("{remote:?}").contains("secret"));
    }
}
