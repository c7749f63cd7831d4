//! The Harmony client for gpt-oss through a raw completions endpoint (vLLM, llama.cpp, Ollama).
//!
//! chorus renders the prompt itself with chorus-harmony (system message, developer instructions,
//! tools as the `functions` TypeScript namespace, the "# Response Formats" section for an output
//! schema) and sends it to `POST {base}/completions` as token ids or as text
//! ([`PromptForm`]), with `<|return|>` and `<|call|>` as stop tokens and
//! `skip_special_tokens: false` so the reply keeps its Harmony framing. The reply — text with
//! special tokens written out, or `token_ids` when the server sends them — is stream-parsed by
//! channel in lenient mode and mapped to chorus messages: analysis as reasoning parts, calls
//! (`to=functions.x`) as tool calls with string arguments, final text as text, with the
//! message's `channel` set to the channel that ended it. Prompt tokens are counted here when the
//! server reports no usage. Cancellation: drop the future.

use std::time::Instant;

use async_trait::async_trait;
use chorus_core::Conversation;
use chorus_harmony::chorus_map::{add_response_format, to_harmony};
use chorus_harmony::{RenderOptions, ResponseFormat, SystemContent, encoding, render, tokens};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tracing::Instrument;

use super::config::EndpointConfig;
use super::harmony_reply::ReplyReader;
use super::http::{self, ChunkReader, Failure};
use super::stamp::{Measured, stamp};
use super::trace::{self, Operation};
use super::{ModelClient, ModelError, ModelReply, ModelRequest, StreamEvent};

/// How the rendered prompt is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptForm {
    /// A list of token ids (vLLM `/v1/completions`, llama.cpp `/completion`).
    #[default]
    TokenIds,
    /// Text with the special tokens written out (servers that tokenize special tokens in text).
    Text,
}

/// A Harmony (gpt-oss) client over a raw completions endpoint.
#[derive(Debug, Clone)]
pub struct HarmonyClient {
    http: reqwest::Client,
    config: EndpointConfig,
    prompt: PromptForm,
    system: SystemContent,
    path: String,
}

/// A prompt ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct HarmonyPrompt {
    /// The request body.
    pub body: Value,
    /// The prompt's token count.
    pub prompt_tokens: usize,
}

impl HarmonyClient {
    /// A client posting token-id prompts to `{base}/completions` with the default system
    /// message (reasoning effort medium).
    pub fn new(config: EndpointConfig) -> Self {
        HarmonyClient {
            http: reqwest::Client::new(),
            config,
            prompt: PromptForm::TokenIds,
            system: SystemContent::default(),
            path: "completions".into(),
        }
    }

    /// A client configured from the environment (see [`EndpointConfig::from_env`]).
    pub fn from_env() -> Result<Self, ModelError> {
        Ok(Self::new(EndpointConfig::from_env()?))
    }

    /// Sends the prompt as token ids or as text.
    pub fn with_prompt_form(mut self, form: PromptForm) -> Self {
        self.prompt = form;
        self
    }

    /// Uses `system` as the Harmony system message (identity, reasoning effort, dates).
    pub fn with_system(mut self, system: SystemContent) -> Self {
        self.system = system;
        self
    }

    /// Posts to `{base}/{path}` instead of `{base}/completions` (llama.cpp: `completion`).
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Renders `request` into the request body.
    pub fn prompt(&self, request: &ModelRequest) -> Result<HarmonyPrompt, ModelError> {
        let conversation = Conversation {
            messages: chorus_context::data::assemble(&request.messages),
            tools: (!request.tools.is_empty()).then(|| request.tools.clone()),
            extra: Map::new(),
        };
        let mapped = to_harmony(&conversation, self.system.clone());
        for loss in &mapped.losses {
            tracing::debug!(pointer = %loss.pointer, what = %loss.what, "left out of the Harmony prompt");
        }
        let mut harmony = mapped.conversation;
        if let Some((name, schema)) = &request.output_schema {
            let format = ResponseFormat {
                name: name.clone(),
                description: None,
                schema: schema.clone(),
            };
            add_response_format(&mut harmony, format);
        }
        let ids = render(&harmony, &RenderOptions::default())
            .map_err(|e| ModelError::Config(format!("cannot render the Harmony prompt: {e}")))?;
        let prompt = match self.prompt {
            PromptForm::TokenIds => json!(ids),
            PromptForm::Text => json!(encoding().decode_utf8(&ids).map_err(|e| {
                ModelError::Config(format!("cannot write the Harmony prompt as text: {e}"))
            })?),
        };
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("prompt".into(), prompt);
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
        body.insert("skip_special_tokens".into(), json!(false));
        body.insert(
            "stop_token_ids".into(),
            json!([tokens::RETURN, tokens::CALL]),
        );
        body.insert("stop".into(), json!(["<|return|>", "<|call|>"]));
        if let Some(t) = request.temperature {
            body.insert("temperature".into(), json!(t));
        }
        // The completions API has only `max_tokens` (gpt-oss is no OpenAI reasoning family).
        if let Some(n) = request.max_tokens {
            body.insert("max_tokens".into(), json!(n));
        }
        Ok(HarmonyPrompt {
            body: Value::Object(body),
            prompt_tokens: ids.len(),
        })
    }

    async fn attempt(
        &self,
        request: &ModelRequest,
        prompt: &HarmonyPrompt,
        events: Option<&UnboundedSender<StreamEvent>>,
    ) -> Result<ModelReply, Failure> {
        let started = Instant::now();
        let response = http::post(&self.http, &self.config, &self.path, &prompt.body).await?;
        let mut reply = ReplyReader::new(events);
        let mut usage = None;
        let mut finish = None;
        if http::is_event_stream(&response) {
            let mut reader = ChunkReader::new(response, &self.config);
            while let Some(chunk) = reader.next().await? {
                reply.chunk(&chunk, started)?;
                usage = chunk
                    .get("usage")
                    .filter(|u| !u.is_null())
                    .cloned()
                    .or(usage);
                finish = finish_reason(&chunk).or(finish);
            }
        } else {
            let chunk = http::json_body(response, &self.config).await?;
            reply.chunk(&chunk, started)?;
            usage = chunk.get("usage").filter(|u| !u.is_null()).cloned();
            finish = finish_reason(&chunk);
        }
        let total = started.elapsed();
        let ttft = reply.ttft;
        let (mut messages, generated, calls) = reply.finish()?;
        let usage = token_usage(usage.as_ref(), prompt.prompt_tokens, generated);
        stamp(
            &mut messages,
            Measured {
                ttft,
                total,
                usage: Some(usage),
                model: request.model.clone(),
            },
            &self.config,
        );
        let finish_reason = if calls {
            Some("tool_calls".into())
        } else {
            finish
        };
        Ok(ModelReply {
            messages,
            finish_reason,
        })
    }
}

fn finish_reason(chunk: &Value) -> Option<String> {
    chunk
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The server's usage, or our own counts where it reported none.
fn token_usage(
    reported: Option<&Value>,
    prompt: usize,
    generated: usize,
) -> chorus_core::TokenUsage {
    let get = |key: &str| reported.and_then(|u| u.get(key)).and_then(Value::as_u64);
    let prompt_tokens = get("prompt_tokens").unwrap_or(prompt as u64);
    let completion_tokens = get("completion_tokens").unwrap_or(generated as u64);
    let mut usage = chorus_core::TokenUsage {
        prompt_tokens: Some(prompt_tokens),
        completion_tokens: Some(completion_tokens),
        total_tokens: Some(get("total_tokens").unwrap_or(prompt_tokens + completion_tokens)),
        ..Default::default()
    };
    if reported.is_none() {
        usage
            .extra
            .insert("counted_by".into(), json!("chorus (o200k_harmony)"));
    }
    usage
}

#[async_trait]
impl ModelClient for HarmonyClient {
    async fn complete(
        &self,
        request: &ModelRequest,
        events: Option<&UnboundedSender<StreamEvent>>,
    ) -> Result<ModelReply, ModelError> {
        let span = trace::span(Operation::TextCompletion, request, &self.config);
        let outcome = async {
            let prompt = self.prompt(request)?;
            http::with_retries(&self.config, || self.attempt(request, &prompt, events)).await
        }
        .instrument(span.clone())
        .await;
        trace::record(&span, &outcome);
        outcome
    }
}
