//! The OpenAI-compatible Chat Completions client (OpenAI, vLLM, Ollama, llama.cpp, …).
//!
//! It sends `POST {base}/chat/completions` with `stream: true` and
//! `stream_options.include_usage`, reads the server-sent chunks with chorus-formats'
//! [`StreamAccumulator`] (tool-call deltas assembled by index, `reasoning_content` — and the
//! `reasoning` field some servers use instead — as a leading reasoning part), and stamps the
//! reply with usage, cost and latency. A server that answers with one JSON body instead of a
//! stream is read too. Data parts (seed 004) are merged and rendered with chorus-context before
//! sending. Cancellation: drop the future returned by [`ModelClient::complete`]; the connection
//! is closed and nothing else runs.

use std::collections::HashSet;
use std::time::Instant;

use async_trait::async_trait;
use chorus_context::TokenCounter;
use chorus_core::{Conversation, Message, TokenUsage};
use chorus_formats::EncodeOptions;
use chorus_formats::openai_chat::{self, StreamAccumulator, decode_response};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use super::config::EndpointConfig;
use super::http::{self, ChunkReader, Failure};
use super::stamp::{Measured, ensure_call_ids, stamp};
use super::trace::{self, Operation};
use super::{ModelClient, ModelError, ModelReply, ModelRequest, StreamEvent};

/// A Chat Completions client.
#[derive(Debug, Clone)]
pub struct OpenAiChatClient {
    http: reqwest::Client,
    config: EndpointConfig,
    strict_schemas: Option<bool>,
}

impl OpenAiChatClient {
    /// A client for the endpoint in `config`.
    pub fn new(config: EndpointConfig) -> Self {
        OpenAiChatClient {
            http: reqwest::Client::new(),
            config,
            strict_schemas: None,
        }
    }

    /// A client configured from the environment (see [`EndpointConfig::from_env`]).
    pub fn from_env() -> Result<Self, ModelError> {
        Ok(Self::new(EndpointConfig::from_env()?))
    }

    /// Forces `response_format.json_schema.strict` to `strict`. By default it is `true` exactly
    /// when the schema meets OpenAI's strict-mode rules (every object lists all its properties
    /// in `required` and sets `additionalProperties: false`), so a looser schema is not rejected.
    pub fn with_strict_schemas(mut self, strict: bool) -> Self {
        self.strict_schemas = Some(strict);
        self
    }

    /// The endpoint configuration.
    pub fn config(&self) -> &EndpointConfig {
        &self.config
    }

    /// The JSON body sent for `request`.
    pub fn request_body(&self, request: &ModelRequest) -> Value {
        let conversation = Conversation {
            messages: chorus_context::data::assemble(&request.messages),
            tools: (!request.tools.is_empty()).then(|| request.tools.clone()),
            extra: Map::new(),
        };
        let encoded = openai_chat::encode(&conversation, &EncodeOptions::default());
        for loss in &encoded.losses {
            tracing::debug!(path = %loss.path, what = %loss.what, "left out of the Chat Completions request");
        }
        let mut body = match encoded.value {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        body.insert("model".into(), json!(request.model));
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        if let Some(t) = request.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(n) = request.max_tokens {
            let key = self.config.max_tokens_key(&request.model);
            body.insert(key.into(), json!(n));
        }
        if let Some((name, schema)) = &request.output_schema {
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": name, "schema": schema,
                    "strict": self.strict_schemas.unwrap_or_else(|| strict_compatible(schema))}}),
            );
        }
        Value::Object(body)
    }

    async fn attempt(
        &self,
        request: &ModelRequest,
        body: &Value,
        events: Option<&UnboundedSender<StreamEvent>>,
    ) -> Result<ModelReply, Failure> {
        let started = Instant::now();
        let response = http::post(&self.http, &self.config, "chat/completions", body).await?;
        let (conversation, ttft) = if http::is_event_stream(&response) {
            read_stream(ChunkReader::new(response, &self.config), started, events).await?
        } else {
            let value = http::json_body(response, &self.config).await?;
            let conversation = decode_response(value).map_err(|e| {
                ModelError::Protocol(format!("not a chat.completion response: {e}"))
            })?;
            (conversation, Some(started.elapsed()))
        };
        let total = started.elapsed();
        let mut messages = conversation.messages;
        messages.truncate(1);
        let Some(message) = messages.first_mut() else {
            return Err(ModelError::Protocol("the response has no choices".into()).into());
        };
        let finish_reason = message
            .metadata
            .as_mut()
            .and_then(|m| m.extra.remove("finish_reason"))
            .and_then(|v| v.as_str().map(str::to_owned));
        ensure_call_ids(&mut messages);
        let reported = messages[0]
            .metadata
            .as_ref()
            .is_some_and(|m| m.token_usage.is_some());
        let measured = Measured {
            ttft,
            total,
            usage: (!reported)
                .then(|| estimate_usage(request, &messages[0]))
                .flatten(),
            model: request.model.clone(),
        };
        stamp(&mut messages, measured, &self.config);
        Ok(ModelReply {
            messages,
            finish_reason,
        })
    }
}

/// Usage counted offline with chorus-context when the server reported none (marked
/// `counted_by`); the model's tokenizer family, or an approximation for unknown models.
fn estimate_usage(request: &ModelRequest, reply: &Message) -> Option<TokenUsage> {
    let counter = TokenCounter::for_model(&request.model)
        .or_else(|_| TokenCounter::for_model("approximate"))
        .ok()?;
    let sent = chorus_context::data::assemble(&request.messages);
    let prompt = counter.count_request(&sent, &request.tools).ok()?.total as u64;
    let completion = counter.count_message(reply, 0).ok()?.total() as u64;
    let mut usage = TokenUsage {
        prompt_tokens: Some(prompt),
        completion_tokens: Some(completion),
        total_tokens: Some(prompt + completion),
        ..TokenUsage::default()
    };
    usage
        .extra
        .insert("counted_by".into(), json!("chorus (estimate)"));
    Some(usage)
}

/// Whether `schema` meets OpenAI's strict structured-output rules: every object schema sets
/// `additionalProperties: false` and requires all of its properties.
pub(crate) fn strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let is_object =
                map.get("type") == Some(&json!("object")) || map.contains_key("properties");
            if is_object {
                let properties = map.get("properties").and_then(Value::as_object);
                let required: HashSet<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let all_required =
                    properties.is_none_or(|p| p.keys().all(|k| required.contains(k.as_str())));
                if map.get("additionalProperties") != Some(&json!(false)) || !all_required {
                    return false;
                }
            }
            map.iter()
                .filter(|(k, _)| {
                    !matches!(
                        k.as_str(),
                        "required" | "enum" | "const" | "default" | "examples"
                    )
                })
                .all(|(_, v)| strict_compatible(v))
        }
        Value::Array(items) => items.iter().all(strict_compatible),
        _ => true,
    }
}

/// Reads a chunk stream; returns the decoded reply and the time to the first generated piece.
async fn read_stream(
    mut reader: ChunkReader,
    started: Instant,
    events: Option<&UnboundedSender<StreamEvent>>,
) -> Result<(Conversation, Option<std::time::Duration>), Failure> {
    let mut accumulator = StreamAccumulator::new();
    let mut ttft = None;
    let mut announced = HashSet::new();
    while let Some(mut chunk) = reader.next().await? {
        rename_reasoning(&mut chunk);
        if ttft.is_none() && generates(&chunk) {
            ttft = Some(started.elapsed());
        }
        if let Some(events) = events {
            forward(&chunk, events, &mut announced);
        }
        accumulator
            .push(&chunk)
            .map_err(|e| ModelError::Protocol(format!("bad stream chunk: {e}")))?;
    }
    let conversation = accumulator
        .finish()
        .map_err(|e| ModelError::Protocol(format!("bad stream: {e}")))?;
    Ok((conversation, ttft))
}

/// The first choice's delta.
fn delta(chunk: &Value) -> Option<&Value> {
    chunk.pointer("/choices/0/delta")
}

/// `reasoning` deltas (Ollama, OpenRouter, newer vLLM) read as `reasoning_content`.
fn rename_reasoning(chunk: &mut Value) {
    let Some(Value::Array(choices)) = chunk.get_mut("choices") else {
        return;
    };
    for choice in choices {
        if let Some(Value::Object(delta)) = choice.get_mut("delta")
            && !delta.contains_key("reasoning_content")
            && let Some(text) = delta.remove("reasoning")
        {
            delta.insert("reasoning_content".into(), text);
        }
    }
}

/// Whether the chunk carries generated text, reasoning or a tool call.
fn generates(chunk: &Value) -> bool {
    delta(chunk).is_some_and(|d| {
        ["content", "reasoning_content"].iter().any(|k| {
            d.get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        }) || d.get("tool_calls").is_some_and(|c| !c.is_null())
    })
}

/// Sends the chunk's pieces as stream events (a closed receiver is ignored).
fn forward(chunk: &Value, events: &UnboundedSender<StreamEvent>, announced: &mut HashSet<u64>) {
    let Some(delta) = delta(chunk) else {
        return;
    };
    for (key, channel) in [("reasoning_content", Some("analysis")), ("content", None)] {
        if let Some(text) = delta
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            let _ = events.send(StreamEvent::Text {
                channel: channel.map(str::to_owned),
                delta: text.to_owned(),
            });
        }
    }
    for call in delta
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
        let name = call.pointer("/function/name").and_then(Value::as_str);
        if let Some(name) = name.filter(|n| !n.is_empty())
            && announced.insert(index)
        {
            let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
            let _ = events.send(StreamEvent::ToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
            });
        }
    }
}

#[async_trait]
impl ModelClient for OpenAiChatClient {
    async fn complete(
        &self,
        request: &ModelRequest,
        events: Option<&UnboundedSender<StreamEvent>>,
    ) -> Result<ModelReply, ModelError> {
        let span = trace::span(Operation::Chat, request, &self.config);
        let body = self.request_body(request);
        let outcome = http::with_retries(&self.config, || self.attempt(request, &body, events))
            .instrument(span.clone())
            .await;
        trace::record(&span, &outcome);
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_mode_only_for_schemas_that_meet_its_rules() {
        let strict = json!({"type": "object", "additionalProperties": false,
            "properties": {"a": {"type": "array", "items": {"type": "object",
                "properties": {"b": {"type": "string"}}, "required": ["b"],
                "additionalProperties": false}}},
            "required": ["a"]});
        assert!(strict_compatible(&strict));
        let mut loose_inner = strict.clone();
        loose_inner["properties"]["a"]["items"]["required"] = json!([]);
        assert!(!strict_compatible(&loose_inner));
        assert!(!strict_compatible(&json!({"type": "object"})));
        assert!(strict_compatible(&json!({"type": "string", "enum": ["x"]})));
    }
}
