//! Settings shared by every backend.

use std::sync::Arc;
use std::time::Duration;

use crate::core::CoreValidator;
use crate::fair::DEFAULT_WEIGHTS;
use crate::routing::RoutingRule;
pub use crate::validator::Validator;

/// Delivery settings of a bus.
#[derive(Clone)]
pub struct BusConfig {
    /// How long a consumer holds a delivery before it is redelivered.
    pub ack_wait: Duration,
    /// Deliveries of one message before it becomes a dead letter.
    pub max_deliver: u32,
    /// A message id published again within this window is not stored again.
    pub dedupe_window: Duration,
    /// Fair-share weights of LOW, MEDIUM, HIGH, CRITICAL.
    pub weights: [u32; 4],
    /// Rules that redirect messages by payload fields, tried in order.
    pub rules: Vec<RoutingRule>,
    /// Validation on publish; by default chorus-core's schemas and checks.
    pub validator: Option<Arc<dyn Validator>>,
    /// How often a waiting `receive` looks again for messages from other processes.
    pub poll_interval: Duration,
}

impl Default for BusConfig {
    fn default() -> Self {
        BusConfig {
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            dedupe_window: Duration::from_secs(120),
            weights: DEFAULT_WEIGHTS,
            rules: Vec::new(),
            validator: Some(Arc::new(CoreValidator::any())),
            poll_interval: Duration::from_millis(10),
        }
    }
}

impl std::fmt::Debug for BusConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BusConfig")
            .field("ack_wait", &self.ack_wait)
            .field("max_deliver", &self.max_deliver)
            .field("dedupe_window", &self.dedupe_window)
            .field("weights", &self.weights)
            .field("rules", &self.rules)
            .field("validator", &self.validator.is_some())
            .field("poll_interval", &self.poll_interval)
            .finish()
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    // The system clock directly: called on every publish and fetch, and cheaper than a
    // calendar time. A clock set before 1970 reads as 0.
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
