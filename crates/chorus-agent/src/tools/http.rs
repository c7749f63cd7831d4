//! The `http` tool kind: a URL template, a method, headers and a timeout.

use std::time::Duration;

use base64::Engine;
use chorus_core::{ContentPart, ToolDefinition};
use indexmap::IndexMap;
use serde_json::{Value, json};

use super::{ToolOutput, template};

/// Calls an HTTP endpoint; `{arg}` placeholders in the URL are percent-encoded, in headers
/// filled as given. GET and DELETE send no body; other methods send the arguments as JSON.
pub struct HttpTool {
    definition: ToolDefinition,
    url: String,
    method: reqwest::Method,
    headers: IndexMap<String, String>,
    timeout: Duration,
    requires_confirmation: bool,
    client: reqwest::Client,
}

impl HttpTool {
    /// A tool calling `url` with `method` (e.g. `GET`); fails on an unknown method name.
    pub fn new(
        definition: ToolDefinition,
        method: &str,
        url: impl Into<String>,
    ) -> Result<Self, String> {
        let method =
            reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes()).map_err(|_| {
                format!("expected an HTTP method such as GET or POST, found {method:?}")
            })?;
        Ok(HttpTool {
            definition,
            url: url.into(),
            method,
            headers: IndexMap::new(),
            timeout: Duration::from_secs(30),
            requires_confirmation: false,
            client: reqwest::Client::new(),
        })
    }

    /// The same tool with header templates.
    pub fn with_headers(mut self, headers: IndexMap<String, String>) -> Self {
        self.headers = headers;
        self
    }

    async fn execute(&self, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
        let url = template::render(&self.url, arguments, true)?;
        let mut request = self
            .client
            .request(self.method.clone(), &url)
            .timeout(self.timeout);
        for (name, value) in &self.headers {
            request = request.header(name, template::render(value, arguments, false)?);
        }
        if !matches!(self.method, reqwest::Method::GET | reqwest::Method::DELETE) {
            request = request.json(arguments);
        }
        let response = request.send().await.map_err(|e| {
            let kind = if e.is_timeout() { "Timeout" } else { "HttpUnreachable" };
            ToolOutput::error(
                kind,
                format!("The request to the tool's endpoint failed: {e}. Hint: try again later or use another tool."),
            )
        })?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = response.bytes().await.map_err(|e| {
            ToolOutput::error("HttpUnreachable", format!("The response broke off: {e}."))
        })?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let excerpt: String = text.chars().take(500).collect();
            return Err(ToolOutput::error(
                format!("HttpStatus{}", status.as_u16()),
                format!(
                    "The endpoint answered {status}: {excerpt}. Hint: check the arguments and call again."
                ),
            ));
        }
        if content_type.starts_with("image/") {
            let data = base64::engine::general_purpose::STANDARD.encode(&body);
            let part: ContentPart = serde_json::from_value(json!({
                "type": "image_url",
                "image_url": {"url": format!("data:{content_type};base64,{data}")}
            }))
            .map_err(|e| ToolOutput::error("ToolFailed", e.to_string()))?;
            return Ok(ToolOutput::success(
                json!({"status": "success", "content_type": content_type, "bytes": body.len()}),
            )
            .with_media(vec![part]));
        }
        Ok(match serde_json::from_slice::<Value>(&body) {
            Ok(value) => ToolOutput::success(value),
            Err(_) => ToolOutput::success(
                json!({"status": "success", "body": String::from_utf8_lossy(&body)}),
            ),
        })
    }
}

configured_tool!(HttpTool);
