//! `peek` on the Redis backend: XRANGE reads a queue's entries and XPENDING their deliveries;
//! neither claims an entry or counts a delivery.

use std::collections::HashMap;

use redis::streams::{StreamPendingCountReply, StreamPendingId, StreamRangeReply};

use super::{GROUP, RedisBus, field, redis_error};
use crate::config::{millis, now_ms};
use crate::error::BusResult;
use crate::peek::{PEEK_LIMIT, Queued, QueuedState};
use crate::stored::unpack;

impl RedisBus {
    /// Up to `limit` unacknowledged entries of `queue`, highest priority first, then oldest
    /// first. A pending entry's lease ends `ack_wait` after its last delivery, or a nack
    /// delay earlier: Redis keeps one idle time for both, so a hidden entry is
    /// [`QueuedState::HeldOrDelayed`].
    pub(super) async fn queued(&self, queue: &str, limit: usize) -> BusResult<Vec<Queued>> {
        let limit = limit.min(PEEK_LIMIT);
        let ack_wait = millis(self.config.ack_wait);
        let mut con = self.con();
        let mut out = Vec::new();
        for rank in (0..4u8).rev() {
            let left = limit - out.len();
            if left == 0 {
                break;
            }
            let key = self.stream(queue, rank);
            let entries: StreamRangeReply = redis::cmd("XRANGE")
                .arg(&key)
                .arg("-")
                .arg("+")
                .arg("COUNT")
                .arg(left)
                .query_async(&mut con)
                .await
                .map_err(redis_error)?;
            let (Some(first), Some(last)) = (entries.ids.first(), entries.ids.last()) else {
                continue;
            };
            let pending: Result<StreamPendingCountReply, _> = redis::cmd("XPENDING")
                .arg(&key)
                .arg(GROUP)
                .arg(&first.id)
                .arg(&last.id)
                .arg(entries.ids.len())
                .query_async(&mut con)
                .await;
            let pending = match pending {
                Ok(reply) => reply.ids,
                // No consumer group yet: nothing was ever delivered.
                Err(e) if e.code() == Some("NOGROUP") => Vec::new(),
                Err(e) => return Err(redis_error(e)),
            };
            let by_id: HashMap<&str, &StreamPendingId> =
                pending.iter().map(|p| (p.id.as_str(), p)).collect();
            let now = now_ms();
            for entry in &entries.ids {
                let (attempts, state) = match by_id.get(entry.id.as_str()) {
                    None => (0, QueuedState::Ready),
                    Some(p) => {
                        let idle = i64::try_from(p.last_delivered_ms).unwrap_or(i64::MAX);
                        let visible = now.saturating_add(ack_wait.saturating_sub(idle));
                        (p.times_delivered, QueuedState::hidden_until(visible, now))
                    }
                };
                out.push(Queued {
                    envelope: unpack(&field(&entry.map)?)?,
                    attempts: Some(u32::try_from(attempts).unwrap_or(u32::MAX)),
                    state,
                });
            }
        }
        Ok(out)
    }
}
