//! `peek` on the in-memory backend: a queue's entries read under its lock, nothing claimed.

use std::sync::Arc;

use super::{Entry, QueueCell, lock};
use crate::config::now_ms;
use crate::envelope::{Envelope, Rank};
use crate::peek::{PEEK_LIMIT, Queued, QueuedState};

/// Up to `limit` unacknowledged messages of the queue in delivery order: by priority, the held
/// ones (in claim order), then the ready ones (in queue order), then the delayed ones (by due
/// time). A lease or delay that has run out shows as ready: the next fetch takes it.
pub(super) fn queued(cell: &QueueCell, limit: usize) -> Vec<Queued> {
    let limit = limit.min(PEEK_LIMIT);
    let now = now_ms();
    let mut seen: Vec<(Arc<Envelope>, u32, QueuedState)> = Vec::new();
    {
        let q = lock(&cell.state);
        let mut held: Vec<_> = q.held.iter().collect();
        held.sort_unstable_by_key(|(token, _)| **token);
        let mut delayed: Vec<_> = q.delayed.iter().collect();
        delayed.sort_by_key(|(at, _)| *at);
        for rank in (0..4u8).rev() {
            let of_rank = |e: &Entry| e.env.priority.rank() == rank;
            let held = held
                .iter()
                .filter(|(_, h)| of_rank(&h.entry))
                .map(|(_, h)| {
                    let state = match h.deadline {
                        until_ms if until_ms > now => QueuedState::Held { until_ms },
                        _ => QueuedState::Ready,
                    };
                    (&h.entry, state)
                });
            let ready = q.ready[rank as usize]
                .iter()
                .map(|e| (e, QueuedState::Ready));
            let delayed = delayed.iter().filter(|(_, e)| of_rank(e)).map(|(at, e)| {
                let state = match *at {
                    until_ms if until_ms > now => QueuedState::Delayed { until_ms },
                    _ => QueuedState::Ready,
                };
                (e, state)
            });
            for (entry, state) in held.chain(ready).chain(delayed).take(limit - seen.len()) {
                seen.push((entry.env.clone(), entry.attempts, state));
            }
        }
    }
    // The envelopes are copied after the queue's lock is released.
    seen.into_iter()
        .map(|(env, attempts, state)| Queued {
            envelope: (*env).clone(),
            attempts: Some(attempts),
            state,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::envelope::{Envelope, Priority};
    use crate::memory::MemoryBus;
    use crate::peek::QueuedState;
    use crate::{Backend, BusConfig};

    #[tokio::test]
    async fn held_and_delayed_messages_are_told_apart() {
        let bus = MemoryBus::new(BusConfig {
            validator: None,
            ..BusConfig::default()
        });
        let queues = vec!["q".to_owned()];
        for (id, priority) in [("low", Priority::Low), ("high", Priority::High)] {
            let mut env = Envelope::new(id, queues.clone(), b"{}".to_vec());
            env.priority = priority;
            bus.store(&env, &queues, true).await.unwrap();
        }
        let got = bus.fetch("q", 2).await.unwrap();
        let low = got.iter().find(|d| d.envelope.id == "low").unwrap();
        bus.nack(low, Duration::from_secs(60)).await.unwrap();
        let seen = bus.peek("q", 10).await.unwrap();
        let states: Vec<_> = seen
            .iter()
            .map(|q| (q.envelope.id.as_str(), q.attempts, q.state.name()))
            .collect();
        assert_eq!(
            states,
            [("high", Some(1), "held"), ("low", Some(1), "delayed")]
        );
        assert!(
            matches!(seen[1].state, QueuedState::Delayed { until_ms } if until_ms > crate::now_ms() + 50_000)
        );
        assert_eq!(bus.peek("q", 1).await.unwrap().len(), 1, "the limit holds");
        assert!(bus.peek("never-used", 10).await.unwrap().is_empty());
    }
}
