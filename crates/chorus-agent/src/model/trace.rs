//! The span of one model call, named and attributed after the OpenTelemetry GenAI conventions.
//!
//! `gen_ai.provider.name` is `openai` for both clients: they speak the OpenAI API (Chat
//! Completions, raw completions), which is what the attribute discriminates; `server.address`
//! and `gen_ai.response.model` tell which server and model actually answered.

use tracing::Span;
use tracing::field::Empty;

use super::config::EndpointConfig;
use super::{ModelError, ModelReply, ModelRequest};

/// The provider every chorus model span names.
const PROVIDER: &str = "openai";

/// The GenAI operation of a call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Operation {
    /// Chat Completions (`chat`).
    Chat,
    /// A raw completions prompt (`text_completion`).
    TextCompletion,
}

/// Declares the span with its attributes; `$name` must be a literal (span names are static).
macro_rules! model_span {
    ($name:literal, $request:expr, $config:expr) => {{
        let (address, port) = server($config);
        tracing::info_span!(
            $name,
            otel.name = format!("{} {}", $name, $request.model),
            otel.kind = "client",
            gen_ai.operation.name = $name,
            gen_ai.provider.name = PROVIDER,
            gen_ai.request.model = %$request.model,
            gen_ai.conversation.id = $request.conversation_id.as_deref(),
            gen_ai.request.temperature = $request.temperature,
            gen_ai.request.max_tokens = $request.max_tokens.map(i64::from),
            server.address = address,
            server.port = port.map(i64::from),
            gen_ai.response.model = Empty,
            gen_ai.response.finish_reasons = Empty,
            gen_ai.usage.input_tokens = Empty,
            gen_ai.usage.output_tokens = Empty,
            error.type = Empty,
        )
    }};
}

/// The span of a call of `request` to the endpoint of `config`.
pub(crate) fn span(operation: Operation, request: &ModelRequest, config: &EndpointConfig) -> Span {
    match operation {
        Operation::Chat => model_span!("chat", request, config),
        Operation::TextCompletion => model_span!("text_completion", request, config),
    }
}

/// Host and port of the base URL (`None` when it does not parse).
fn server(config: &EndpointConfig) -> (Option<String>, Option<u16>) {
    match reqwest::Url::parse(&config.base_url) {
        Ok(url) => (
            url.host_str().map(str::to_owned),
            url.port_or_known_default(),
        ),
        Err(_) => (None, None),
    }
}

/// Records the response attributes, or `error.type` for a failure.
pub(crate) fn record(span: &Span, outcome: &Result<ModelReply, ModelError>) {
    let reply = match outcome {
        Ok(reply) => reply,
        Err(error) => {
            span.record("error.type", error_type(error).as_str());
            return;
        }
    };
    if let Some(reason) = &reply.finish_reason {
        finish_reasons(span, reason);
    }
    let Some(metadata) = reply.messages.last().and_then(|m| m.metadata.as_ref()) else {
        return;
    };
    if let Some(model) = &metadata.model_version {
        span.record("gen_ai.response.model", model.as_str());
    }
    if let Some(usage) = &metadata.token_usage {
        span.record("gen_ai.usage.input_tokens", int(usage.prompt_tokens));
        span.record("gen_ai.usage.output_tokens", int(usage.completion_tokens));
    }
}

/// A count as a signed integer: OpenTelemetry's integers are i64 (tracing-opentelemetry writes
/// a `u64` field as text).
fn int(count: Option<u64>) -> Option<i64> {
    count.and_then(|n| i64::try_from(n).ok())
}

/// `gen_ai.response.finish_reasons`: a string array as the conventions type it (feature
/// `otel`, through the span's OpenTelemetry side), else the array as JSON text.
fn finish_reasons(span: &Span, reason: &str) {
    #[cfg(feature = "otel")]
    {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        let reasons = opentelemetry::Array::String(vec![reason.to_owned().into()]);
        span.set_attribute(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(reasons),
        );
    }
    #[cfg(not(feature = "otel"))]
    {
        let reasons = serde_json::json!([reason]).to_string();
        span.record("gen_ai.response.finish_reasons", reasons.as_str());
    }
}

/// A short class of the failure: the HTTP status, or the kind of error.
fn error_type(error: &ModelError) -> String {
    match error {
        ModelError::Transport(_) => "transport".into(),
        ModelError::Status { status, .. } => status.to_string(),
        ModelError::Timeout(_) => "timeout".into(),
        ModelError::Cancelled => "cancelled".into(),
        ModelError::Protocol(_) => "protocol".into(),
        ModelError::Config(_) => "config".into(),
    }
}
