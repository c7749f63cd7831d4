//! What every request handler shares: the bus, the tokens, the held deliveries, the metrics.

use std::sync::Arc;

use chorus_agent::confirm::Confirmations;
use chorus_bus::Bus;
use tokio::sync::watch;

use crate::auth::Tokens;
use crate::blobs::BlobStore;
use crate::inbox::Inboxes;
use crate::metrics::Metrics;
use crate::policy::Policy;
use crate::rate::RateLimiter;
use crate::redact::Redactor;
use crate::telemetry::Traces;

/// Shared state of one running server: one reference count to clone per request (axum's
/// `State` clones it for every handler), the parts behind it.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    /// The state holding `shared`.
    pub fn new(shared: Shared) -> AppState {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] holds.
pub struct Shared {
    /// Where messages are stored and delivered from.
    pub bus: Arc<dyn Bus>,
    /// Who may call.
    pub tokens: Arc<Tokens>,
    /// What each agent may read and send.
    pub policy: Arc<Policy>,
    /// How many new inboxes each agent has created by publishing.
    pub quota: Arc<crate::quota::InboxQuota>,
    /// How much each agent may write to its journals.
    pub journal_quota: Arc<crate::quota::JournalQuota>,
    /// How many inbox streams each agent holds open.
    pub streams: Arc<crate::streams::StreamCap>,
    /// Per-agent limits on publishing.
    pub rate: Arc<RateLimiter>,
    /// Per-agent limits on acks, nacks and lease extensions.
    pub settle_rate: Arc<RateLimiter>,
    /// What is redacted before storing.
    pub redactor: Arc<Redactor>,
    /// What happened to each delivery, written to the store in the background.
    pub history: crate::history::History,
    /// Deliveries handed to agents over SSE and not yet settled.
    pub inboxes: Arc<Inboxes>,
    /// Counters and gauges for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Tool calls waiting for, or given, a person's decision.
    pub confirmations: Arc<dyn Confirmations>,
    /// Images and audio taken out of stored messages.
    pub blobs: Arc<BlobStore>,
    /// Trace contexts kept by message id, for documents whose metadata cannot carry one.
    pub traces: Arc<Traces>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How long what a closed inbox stream held waits for its client before it goes back to
    /// the store (`hand_back_ms`).
    pub hand_back: std::time::Duration,
    /// Longest time an answer that is not a stream may take (`None`: no limit).
    pub request_timeout: Option<std::time::Duration>,
    /// Turns true when the server shuts down; open event streams end then.
    pub stopping: watch::Receiver<bool>,
    /// Where the changes the admin's event streams show are announced.
    pub live: crate::live::Live,
    /// Whether the store took the last writes (`/healthz` reports a store that refuses them).
    pub writes: crate::write_health::WriteHealth,
}

impl AppState {
    /// Resolves when the server starts shutting down.
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + use<> {
        let mut rx = self.stopping.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }
}
