//! Putting usage, cost, latency and the model into a reply's metadata.

use std::time::Duration;

use chorus_core::{Latency, Message, Metadata, TokenUsage};
use serde_json::Number;

use super::config::EndpointConfig;

/// What one call measured.
pub(crate) struct Measured {
    /// Time to the first generated token.
    pub ttft: Option<Duration>,
    /// Time to the end of the reply.
    pub total: Duration,
    /// Token usage, as reported or counted.
    pub usage: Option<TokenUsage>,
    /// The model name the request asked for.
    pub model: String,
}

/// Milliseconds as a JSON number with microsecond precision.
fn millis(duration: Duration) -> Option<Number> {
    Number::from_f64((duration.as_secs_f64() * 1e6).round() / 1e3)
}

/// Stamps the last message: usage with cost, latency, and the model version if the server
/// did not name one.
pub(crate) fn stamp(messages: &mut [Message], measured: Measured, config: &EndpointConfig) {
    let Some(last) = messages.last_mut() else {
        return;
    };
    let metadata = last.metadata.get_or_insert_with(Metadata::default);
    if let Some(mut usage) = measured.usage.or_else(|| metadata.token_usage.take()) {
        if let Some(prices) = &config.prices {
            let reported = metadata.model_version.clone().unwrap_or_default();
            if !prices.apply(&measured.model, &mut usage) {
                prices.apply(&reported, &mut usage);
            }
        }
        metadata.token_usage = Some(usage);
    }
    metadata.latency_ms = Some(Latency {
        ttft: measured.ttft.and_then(millis),
        total_time: millis(measured.total),
        ..Latency::default()
    });
    if metadata.model_version.is_none() {
        metadata.model_version = Some(measured.model);
    }
}

/// Gives every tool call an id (some servers send none); ids are unique per process.
pub(crate) fn ensure_call_ids(messages: &mut [Message]) {
    for message in messages {
        let Some(calls) = message.tool_calls.value_mut() else {
            continue;
        };
        for call in calls.iter_mut().filter(|c| c.id.is_empty()) {
            call.id = new_call_id();
        }
    }
}

/// A fresh tool-call id.
pub(crate) fn new_call_id() -> String {
    format!("call_{}", uuid::Uuid::new_v4().simple())
}
