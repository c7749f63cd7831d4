//! Settings shared by every backend.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::check::PublishCheck;
use crate::documents::CoreValidator;
use crate::fair::DEFAULT_WEIGHTS;
use crate::routing::RoutingRule;

/// How long a published id is remembered by default: 7 days, the retention of the message log,
/// so that a retry is recognised as long as the message it repeats can be read back.
pub const DEFAULT_DEDUPE_WINDOW: Duration = Duration::from_secs(7 * 24 * 3600);

/// Delivery settings of a bus.
#[derive(Clone)]
pub struct BusConfig {
    /// How long a consumer holds a delivery before it is redelivered (unless its queue has its
    /// own in `queue_settings`; see [`BusConfig::ack_wait_for`]).
    pub ack_wait: Duration,
    /// Deliveries of one message before it becomes a dead letter (unless its queue has its own;
    /// see [`BusConfig::max_deliver_for`]).
    pub max_deliver: u32,
    /// How long a published message id is remembered, with a digest of its content: within it,
    /// the same id with the same content is a duplicate (not stored again) and with other
    /// content a [`BusError::Conflict`](crate::BusError::Conflict). Durable backends keep it
    /// across restarts. Default [`DEFAULT_DEDUPE_WINDOW`] (7 days).
    pub dedupe_window: Duration,
    /// Per-queue overrides of `ack_wait` and `max_deliver`, by queue name.
    pub queue_settings: HashMap<String, QueueSettings>,
    /// Fair-share weights of LOW, MEDIUM, HIGH, CRITICAL.
    pub weights: [u32; 4],
    /// Rules that redirect messages by payload fields, tried in order.
    pub rules: Vec<RoutingRule>,
    /// Validation on publish; by default chorus-core's schemas and checks.
    pub validator: Option<Arc<dyn PublishCheck>>,
    /// How often a waiting `receive` looks again for messages from other processes.
    pub poll_interval: Duration,
}

impl Default for BusConfig {
    fn default() -> Self {
        BusConfig {
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            dedupe_window: DEFAULT_DEDUPE_WINDOW,
            queue_settings: HashMap::new(),
            weights: DEFAULT_WEIGHTS,
            rules: Vec::new(),
            validator: Some(Arc::new(CoreValidator::any())),
            poll_interval: Duration::from_millis(10),
        }
    }
}

/// Delivery settings of one queue that differ from the bus's; `None` keeps the bus's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueSettings {
    /// How long a consumer of this queue holds a delivery before it is redelivered.
    pub ack_wait: Option<Duration>,
    /// Deliveries of a message of this queue before it becomes a dead letter.
    pub max_deliver: Option<u32>,
}

impl BusConfig {
    /// The ack wait of `queue`: its own in `queue_settings`, else `ack_wait`.
    pub fn ack_wait_for(&self, queue: &str) -> Duration {
        self.queue_settings
            .get(queue)
            .and_then(|s| s.ack_wait)
            .unwrap_or(self.ack_wait)
    }

    /// The delivery limit of `queue`: its own in `queue_settings`, else `max_deliver`.
    pub fn max_deliver_for(&self, queue: &str) -> u32 {
        self.queue_settings
            .get(queue)
            .and_then(|s| s.max_deliver)
            .unwrap_or(self.max_deliver)
    }
}

impl std::fmt::Debug for BusConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BusConfig")
            .field("ack_wait", &self.ack_wait)
            .field("max_deliver", &self.max_deliver)
            .field("dedupe_window", &self.dedupe_window)
            .field("queue_settings", &self.queue_settings)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_remembered_for_7_days_and_queues_may_override_delivery() {
        let mut config = BusConfig::default();
        assert_eq!(config.dedupe_window, Duration::from_secs(604_800));
        config.queue_settings.insert(
            "slow".into(),
            QueueSettings {
                ack_wait: Some(Duration::from_secs(600)),
                max_deliver: None,
            },
        );
        config.queue_settings.insert(
            "fragile".into(),
            QueueSettings {
                ack_wait: None,
                max_deliver: Some(1),
            },
        );
        assert_eq!(config.ack_wait_for("slow"), Duration::from_secs(600));
        assert_eq!(config.max_deliver_for("slow"), 5);
        assert_eq!(config.ack_wait_for("fragile"), Duration::from_secs(30));
        assert_eq!(config.max_deliver_for("fragile"), 1);
        assert_eq!(config.ack_wait_for("other"), Duration::from_secs(30));
    }
}
