//! Model clients: one trait, an OpenAI-compatible Chat Completions client and a Harmony client.
//!
//! Both clients read their endpoint from an [`EndpointConfig`] (base URL from
//! `CHORUS_MODEL_BASE_URL`, else `OPENAI_BASE_URL`; key from `OPENAI_API_KEY`), retry 429 and
//! 5xx answers with exponential backoff and jitter (honouring `Retry-After`), bound the wait for
//! a response to start and the silence inside a streamed one (not its total length), and put `token_usage` (with `total_cost_usd` from the price table) and
//! `latency_ms` (`ttft`, `total_time`) into the metadata of the reply's last message.
//! Each call runs in a `chat` or `text_completion` span with OpenTelemetry GenAI attributes.
//! Cancellation: drop the future returned by [`ModelClient::complete`].

mod config;
mod harmony;
mod harmony_reply;
mod http;
mod openai;
mod stamp;
mod trace;

pub use config::{EndpointConfig, MaxTokensField};
pub use harmony::{HarmonyClient, HarmonyPrompt, PromptForm};
pub use openai::OpenAiChatClient;

use async_trait::async_trait;
use chorus_core::{Message, ToolDefinition};
use serde_json::Value;

/// Everything a model call needs: the model, the conversation, the tools and an output schema.
#[derive(Debug, Clone, Default)]
pub struct ModelRequest {
    /// Model name as the endpoint knows it.
    pub model: String,
    /// The conversation so far, system prompt first.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// JSON Schema the reply must conform to (structured output), with its name.
    pub output_schema: Option<(String, Value)>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Upper bound on generated tokens.
    pub max_tokens: Option<u32>,
    /// The conversation the call belongs to (a flow's task id): `gen_ai.conversation.id` of
    /// its span; not sent.
    pub conversation_id: Option<String>,
}

/// A streamed piece of a reply, for progress output and UIs.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// Text arrived on a channel (`None` for providers without channels).
    Text {
        /// Harmony channel, if any.
        channel: Option<String>,
        /// The new text.
        delta: String,
    },
    /// The model started a tool call.
    ToolCall {
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
    },
}

/// A finished reply: the assistant messages (reasoning, tool calls, final text) with usage and
/// latency in their metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReply {
    /// The messages the model produced, in order; the last one carries usage and latency.
    pub messages: Vec<Message>,
    /// Why generation stopped (`stop`, `tool_calls`, `length`, …).
    pub finish_reason: Option<String>,
}

/// A model call failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The endpoint could not be reached or the connection broke.
    #[error("model endpoint unreachable: {0}")]
    Transport(String),
    /// The endpoint answered with an error status (after retries, where retried).
    #[error("model endpoint answered {status}: {body}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// The response body, as text.
        body: String,
    },
    /// No response started within `EndpointConfig::timeout`, or a streamed reply fell silent
    /// for `EndpointConfig::idle_timeout` (the limit, in milliseconds).
    #[error("model call timed out after {0} ms")]
    Timeout(u64),
    /// The call was cancelled.
    #[error("model call cancelled")]
    Cancelled,
    /// The reply could not be read.
    #[error("unreadable model reply: {0}")]
    Protocol(String),
    /// The client is misconfigured (no base URL, a bad URL, a prompt that cannot be rendered).
    #[error("model client configuration: {0}")]
    Config(String),
}

/// A language model behind some endpoint.
#[async_trait]
pub trait ModelClient: Send + Sync {
    /// Sends the request and returns the whole reply; streamed pieces go to `events` if given.
    async fn complete(
        &self,
        request: &ModelRequest,
        events: Option<&tokio::sync::mpsc::UnboundedSender<StreamEvent>>,
    ) -> Result<ModelReply, ModelError>;
}
