//! Token usage, cost and latency accumulated by an agent.

use chorus_core::Message;

/// Totals over an agent's model calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Model calls made.
    pub calls: u64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Cost in US dollars, where the client priced the calls.
    pub cost_usd: f64,
    /// Total model time in milliseconds.
    pub latency_ms: f64,
}

impl Usage {
    /// Adds the usage and latency the client put in a reply message's metadata.
    pub fn add_reply(&mut self, message: &Message) {
        self.calls += 1;
        let Some(meta) = &message.metadata else {
            return;
        };
        if let Some(u) = &meta.token_usage {
            self.prompt_tokens += u.prompt_tokens.unwrap_or(0);
            self.completion_tokens += u.completion_tokens.unwrap_or(0);
            self.cost_usd += u
                .total_cost_usd
                .as_ref()
                .and_then(serde_json::Number::as_f64)
                .unwrap_or(0.0);
        }
        if let Some(total) = meta
            .latency_ms
            .as_ref()
            .and_then(|l| l.total_time.as_ref())
            .and_then(serde_json::Number::as_f64)
        {
            self.latency_ms += total;
        }
    }

    /// Adds another agent's totals.
    pub fn merge(&mut self, other: &Usage) {
        self.calls += other.calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cost_usd += other.cost_usd;
        self.latency_ms += other.latency_ms;
    }
}
