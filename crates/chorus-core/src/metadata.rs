//! Message metadata (seed 000, A.6): cost, latency, model fingerprint, tracing and safety.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::citation::CitationMap;

/// Observability data carried by every message; unknown keys are kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Metadata {
    /// Token counts and cost of producing this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_usage: Option<TokenUsage>,
    /// Latency of producing this message, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<Latency>,
    /// The model version that produced the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_version: Option<String>,
    /// The provider's system fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
    /// Business session the message belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Trace id linking the message to an external tracing system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Result of the safety check on this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_check: Option<SafetyCheck>,
    /// Evidence for the `[cit_..]` anchors in the message text (seed 000, A.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_map: Option<CitationMap>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Token usage and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokenUsage {
    /// Tokens in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Tokens in the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Prompt plus completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Cost in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub total_cost_usd: Option<Number>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Latency figures in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latency {
    /// Time to first token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft: Option<Number>,
    /// Total time until the message was complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_time: Option<Number>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Outcome of a content-safety check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SafetyCheck {
    /// Whether the content was flagged.
    pub flagged: bool,
    /// Categories that were flagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Vec<String>>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
