//! `GET /metrics` (Prometheus text): requests by status, repairs of the model's output by kind,
//! time to the first generated token, and generated tokens a second.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Status {
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Kind {
    kind: String,
}

/// The gateway's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<Status, Counter>,
    repairs: Family<Kind, Counter>,
    ttft: Histogram,
    tokens_per_second: Histogram,
}

impl Metrics {
    /// Registers the metrics.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("chorus_gateway");
        let requests = Family::<Status, Counter>::default();
        let repairs = Family::<Kind, Counter>::default();
        let ttft = Histogram::new(exponential_buckets(0.005, 2.0, 14));
        let tokens_per_second = Histogram::new(exponential_buckets(1.0, 2.0, 14));
        registry.register(
            "requests",
            "Chat Completions requests answered, by HTTP status",
            requests.clone(),
        );
        registry.register(
            "repairs",
            "Repairs of the model's output, by kind",
            repairs.clone(),
        );
        registry.register(
            "time_to_first_token_seconds",
            "From the request to the first generated token",
            ttft.clone(),
        );
        registry.register(
            "output_tokens_per_second",
            "Generated tokens a second, after the first",
            tokens_per_second.clone(),
        );
        Metrics {
            registry,
            requests,
            repairs,
            ttft,
            tokens_per_second,
        }
    }

    /// Counts a request answered with `status`.
    pub fn request(&self, status: u16) {
        self.requests.get_or_create(&Status { status }).inc();
    }

    /// Counts one repair of `kind`.
    pub fn repair(&self, kind: &str) {
        self.repairs
            .get_or_create(&Kind {
                kind: kind.to_owned(),
            })
            .inc();
    }

    /// Records a reply's time to first token and its speed after it.
    pub fn timing(&self, ttft_secs: Option<f64>, tokens: usize, total_secs: f64) {
        if let Some(ttft) = ttft_secs {
            self.ttft.observe(ttft);
            let rest = total_secs - ttft;
            if tokens > 1 && rest > 0.0 {
                self.tokens_per_second.observe((tokens - 1) as f64 / rest);
            }
        }
    }

    /// The metrics in Prometheus text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
