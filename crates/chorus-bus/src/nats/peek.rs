//! `peek` on the NATS backend: a queue's messages read one by one from the work-queue stream
//! by subject and sequence (a second consumer on those subjects is refused), and what the
//! queue's durable consumers tell of their deliveries.
//!
//! A consumer's info tells which messages it has delivered (those up to its last delivered
//! stream sequence) and how many of its unacknowledged ones were delivered more than once,
//! but nothing per message: not whether a delivered one is held, delayed by a nack or due
//! again, nor until when. So a delivered message is [`QueuedState::Delivered`], with 1
//! attempt when none of its consumer's messages was delivered again, else an unknown count.

use async_nats::jetstream::stream::LastRawMessageErrorKind;

use super::NatsBus;
use super::wire::{envelope_from, hex, nats_error};
use crate::error::BusResult;
use crate::peek::{PEEK_LIMIT, Queued, QueuedState};

impl NatsBus {
    /// Up to `limit` unacknowledged messages of `queue`, highest priority first, then in
    /// stream order.
    pub(super) async fn queued(&self, queue: &str, limit: usize) -> BusResult<Vec<Queued>> {
        let limit = limit.min(PEEK_LIMIT);
        let mut out = Vec::new();
        for rank in (0..4u8).rev() {
            let subject = format!("{}.q.{}.{rank}", self.ns, hex(queue));
            let mut stored = Vec::new();
            let mut seq = 1;
            while out.len() + stored.len() < limit {
                match self
                    .queues
                    .get_first_raw_message_by_subject(&subject, seq)
                    .await
                {
                    Ok(m) => {
                        seq = m.sequence + 1;
                        stored.push(m);
                    }
                    Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => break,
                    Err(e) => return Err(nats_error(e)),
                }
            }
            if stored.is_empty() {
                continue;
            }
            // Read after the messages: a message delivered meanwhile shows as delivered.
            let info = self.consumer_info(queue, rank).await?;
            let delivered_up_to = info.delivered.stream_sequence;
            let once = info.num_redelivered == 0;
            // Acknowledged up to here: on a replicated stream the consumer's ack is confirmed
            // before the stream has removed the message (a proposal of its own), so a message
            // still stored may already be done.
            let acked_up_to = info.ack_floor.stream_sequence;
            for m in stored.into_iter().filter(|m| m.sequence > acked_up_to) {
                let (attempts, state) = if m.sequence > delivered_up_to {
                    (Some(0), QueuedState::Ready)
                } else {
                    (once.then_some(1), QueuedState::Delivered)
                };
                out.push(Queued {
                    envelope: envelope_from(Some(&m.headers), &m.payload)?,
                    attempts,
                    state,
                });
            }
        }
        Ok(out)
    }
}
