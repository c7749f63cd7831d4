//! What [`Bus::peek`](crate::Bus::peek) shows of a queue: its unacknowledged messages, each
//! with what the store knows of its deliveries, read without claiming anything.

use crate::envelope::Envelope;

/// Most messages one peek returns, whatever limit is asked for.
pub const PEEK_LIMIT: usize = 1000;

/// A message a queue holds and has not had acknowledged, as a peek shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Queued {
    /// The message.
    pub envelope: Envelope,
    /// Deliveries made so far (0: never delivered); `None` when the store cannot tell (NATS,
    /// once a message of the queue and priority was delivered again).
    pub attempts: Option<u32>,
    /// Whether it waits for a consumer, is held by one, or is delayed.
    pub state: QueuedState,
}

/// Where an unacknowledged message stands; times are Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueuedState {
    /// Deliverable now: the next fetch may take it (a lease that ran out counts as ready).
    Ready,
    /// Held by a consumer that has not settled it; delivered again at `until_ms` unless settled.
    Held {
        /// When the lease ends.
        until_ms: i64,
    },
    /// Given back with a delay (nack); deliverable again at `until_ms`.
    Delayed {
        /// When it becomes deliverable.
        until_ms: i64,
    },
    /// Not deliverable before `until_ms`: held by a consumer or given back with a delay; the
    /// store keeps no difference between the two (SQLite, Redis).
    HeldOrDelayed {
        /// When it becomes deliverable.
        until_ms: i64,
    },
    /// Delivered and not acknowledged: held, delayed or due again, the store does not say
    /// which nor until when (NATS).
    Delivered,
}

impl QueuedState {
    /// A short name: `ready`, `held`, `delayed`, `held_or_delayed`, `delivered`.
    pub fn name(self) -> &'static str {
        match self {
            QueuedState::Ready => "ready",
            QueuedState::Held { .. } => "held",
            QueuedState::Delayed { .. } => "delayed",
            QueuedState::HeldOrDelayed { .. } => "held_or_delayed",
            QueuedState::Delivered => "delivered",
        }
    }

    /// When the message becomes deliverable, when the store knows and it is not ready now.
    pub fn until_ms(self) -> Option<i64> {
        match self {
            QueuedState::Held { until_ms }
            | QueuedState::Delayed { until_ms }
            | QueuedState::HeldOrDelayed { until_ms } => Some(until_ms),
            QueuedState::Ready | QueuedState::Delivered => None,
        }
    }

    /// True unless the store knows that no consumer holds the message now.
    pub fn may_be_held(self) -> bool {
        matches!(
            self,
            QueuedState::Held { .. } | QueuedState::HeldOrDelayed { .. } | QueuedState::Delivered
        )
    }

    /// The state of a delivery hidden until `visible_ms` (held or delayed, the store cannot
    /// tell which), seen at `now_ms`: ready once that time has come.
    pub(crate) fn hidden_until(visible_ms: i64, now_ms: i64) -> QueuedState {
        if visible_ms <= now_ms {
            QueuedState::Ready
        } else {
            QueuedState::HeldOrDelayed {
                until_ms: visible_ms,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_delivery_is_ready_once_its_time_has_come() {
        assert_eq!(QueuedState::hidden_until(100, 100), QueuedState::Ready);
        let later = QueuedState::hidden_until(101, 100);
        assert_eq!(later, QueuedState::HeldOrDelayed { until_ms: 101 });
        assert_eq!(
            (later.name(), later.until_ms(), later.may_be_held()),
            ("held_or_delayed", Some(101), true)
        );
        assert!(!QueuedState::Delayed { until_ms: 5 }.may_be_held());
        assert_eq!(QueuedState::Delivered.until_ms(), None);
    }
}
