//! The `Bus` trait: the one API every backend implements with the same guarantees.

use std::future::Future;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;

use crate::config::{BusConfig, now_ms};
use crate::delivery::{
    DeadLetter, DeadReason, Delivery, Effect, EffectRecord, Handled, LogEntry, Receipt,
    TrackSummary,
};
use crate::envelope::Envelope;
use chorus_core::Problem;

use crate::error::{BusError, BusResult};
use crate::peek::Queued;
use crate::retention::{Page, PruneBefore, Pruned};
use crate::routing::{Binding, resolve};

/// The page size of the methods that read a whole listing a page at a time.
const WHOLE_PAGE: usize = 1000;

/// Durable, routed, at-least-once delivery of messages.
///
/// Backends implement the primitives; the provided methods (`publish`, `receive`, `replay`, …)
/// add validation, routing, expiration and retry limits the same way for all of them.
#[async_trait]
pub trait Bus: Send + Sync {
    /// The delivery settings.
    fn config(&self) -> &BusConfig;

    /// Adds a durable subscription (idempotent). This bus's publishes route by it at once;
    /// other processes sharing the store see it within a second (they cache the bindings).
    async fn bind(&self, binding: Binding) -> BusResult<()>;

    /// All subscriptions.
    async fn bindings(&self) -> BusResult<Vec<Binding>>;

    /// Primitive: stores the message durably in `queues` and in the logs, and remembers its id
    /// with the digest of its content for the dedupe window.
    ///
    /// When `dedupe` is set and the id was stored within the window, nothing is stored: it
    /// returns false for the same content (a duplicate) and [`BusError::Conflict`] for other
    /// content (see [`ContentDigest`](crate::ContentDigest)). Without `dedupe` it always
    /// stores, and the id's window starts again with this content.
    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool>;

    /// Like [`Bus::store`], taking the envelope by value, so that a backend keeping it in
    /// memory need not copy it.
    async fn store_owned(&self, env: Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        self.store(&env, queues, dedupe).await
    }

    /// Primitive: claims up to `max` visible messages of `queue`, in fair priority order,
    /// without waiting; each claim counts as one delivery attempt.
    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>>;

    /// Acknowledges: the message is done and will not be delivered again on this queue.
    async fn ack(&self, delivery: &Delivery) -> BusResult<()>;

    /// Acknowledges every delivery (concurrently, or settled together by the backend); on
    /// failure, the first error, after trying all of them.
    async fn ack_all(&self, deliveries: &[Delivery]) -> BusResult<()> {
        let results = futures::future::join_all(deliveries.iter().map(|d| self.ack(d))).await;
        results.into_iter().collect()
    }

    /// Negative acknowledgement: deliver again after `delay`.
    async fn nack(&self, delivery: &Delivery, delay: Duration) -> BusResult<()>;

    /// Still working: restarts the ack deadline.
    async fn in_progress(&self, delivery: &Delivery) -> BusResult<()>;

    /// Removes the delivery from its queue and records it as a dead letter, atomically.
    async fn dead_letter(&self, delivery: &Delivery, reason: DeadReason) -> BusResult<()>;

    /// Primitive: records bytes refused on publish as a dead letter; returns its id.
    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String>;

    /// All dead letters, oldest first (read a page at a time).
    async fn dead_letters(&self) -> BusResult<Vec<DeadLetter>> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.dead_letters_page(after.as_deref(), WHOLE_PAGE).await?;
            all.extend(page.items);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// Up to `limit` dead letters, oldest first, after the one whose id is `after` (from the
    /// oldest when `None`); `total` is their number.
    async fn dead_letters_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>>;

    /// The dead letter with this id, if there is one.
    async fn find_dead_letter(&self, id: &str) -> BusResult<Option<DeadLetter>>;

    /// How many dead letters there are, without reading them (for a watcher polling it).
    async fn dead_letter_count(&self) -> BusResult<u64>;

    /// Primitive: deletes a dead letter (after it was replayed).
    async fn remove_dead_letter(&self, id: &str) -> BusResult<()>;

    /// Primitive: true when `handler` already committed an effect for `message_id`.
    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool>;

    /// Primitive: atomically records `message_id` as handled by `handler` together with the
    /// effect record and the routed outgoing messages; false when it was already recorded.
    async fn commit_once(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool>;

    /// The committed effects of `handler`, in commit order.
    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>>;

    /// Every stored message of a task, in publish order (read a page at a time).
    async fn by_task(&self, task_id: &str) -> BusResult<Vec<Envelope>> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .task_messages(task_id, after.as_deref(), WHOLE_PAGE)
                .await?;
            all.extend(page.items);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(all),
            }
        }
    }

    /// Up to `limit` stored messages of a task in publish order, after cursor `after` (the
    /// `next` of the page before; `None` for the first page).
    async fn task_messages(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Envelope>>;

    /// Every stored message of a correlation id, in publish order.
    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>>;

    /// The conversation's event log after sequence number `after` (0 for the start).
    async fn conversation(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>>;

    /// The known task ids, most recently active first, at most `limit`.
    async fn tasks(&self, limit: usize) -> BusResult<Vec<TrackSummary>> {
        Ok(self.tasks_page(None, limit).await?.items)
    }

    /// The known conversation ids, most recently active first, at most `limit`.
    async fn conversations(&self, limit: usize) -> BusResult<Vec<TrackSummary>> {
        Ok(self.conversations_page(None, limit).await?.items)
    }

    /// Up to `limit` known tasks, most recently active first (then by id, descending), after
    /// cursor `after`; a task active while the pages are read may move to an earlier page.
    async fn tasks_page(&self, after: Option<&str>, limit: usize) -> BusResult<Page<TrackSummary>>;

    /// Up to `limit` known conversations, in the order of [`Bus::tasks_page`].
    async fn conversations_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>>;

    /// Removes log entries published and dead letters recorded before the times of `before`,
    /// in bounded batches. A message still waiting in a queue (not yet acknowledged) is never
    /// taken from its queue, and entries inside the dedupe window are kept.
    async fn prune(&self, before: PruneBefore) -> BusResult<Pruned>;

    /// When the oldest message still waiting in any queue (not yet acknowledged) was
    /// published, Unix milliseconds; `None` when every queue is empty.
    async fn oldest_waiting_ms(&self) -> BusResult<Option<i64>>;

    /// Messages stored in `queue` and not yet acknowledged (waiting, delayed or being
    /// handled); 0 for a queue never used.
    async fn depth(&self, queue: &str) -> BusResult<u64>;

    /// Up to `limit` (at most [`PEEK_LIMIT`](crate::PEEK_LIMIT)) of the messages `queue` holds
    /// unacknowledged, in delivery order (highest priority first, then oldest first), each
    /// with its attempts so far and whether it is ready, held or delayed, as far as the store
    /// knows. Claims nothing: no attempt is counted, no lease starts, nothing leaves the queue.
    async fn peek(&self, queue: &str, limit: usize) -> BusResult<Vec<Queued>>;

    /// Checks that the store takes a write now (for a health check): a store that answers
    /// reads but refuses writes (a read-only or locked file, a full disk) fails here. By
    /// default, a read of the bindings.
    async fn probe_write(&self) -> BusResult<()> {
        self.bindings().await.map(drop)
    }

    /// Waits until messages may be available on `queue`, at most `timeout`.
    async fn wait_for(&self, _queue: &str, timeout: Duration) {
        tokio::time::sleep(timeout.min(self.config().poll_interval)).await;
    }

    /// Publishes a handoff or a chorus message (JSON bytes): validates it, routes it, stores it
    /// durably.
    ///
    /// An invalid packet is refused with [`BusError::Invalid`] and kept as a dead letter. An id
    /// already stored within the dedupe window gives a receipt with `duplicate` set when the
    /// content is the same, and [`BusError::Conflict`] (nothing stored, no dead letter) when not.
    async fn publish(&self, bytes: Vec<u8>) -> BusResult<Receipt> {
        let bytes = Bytes::from(bytes);
        let document: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                let issue = Problem::expected(
                    "",
                    "a JSON document",
                    format!(
                        "invalid JSON at line {} column {}: {e}",
                        e.line(),
                        e.column()
                    ),
                );
                return Err(reject(self, &bytes, None, vec![issue]).await);
            }
        };
        self.publish_parsed(bytes, &document).await
    }

    /// As [`Bus::publish`], for a caller that has already parsed `bytes` into `document`
    /// (their JSON value, as the server has after its own checks): nothing is parsed again.
    async fn publish_parsed(&self, bytes: Bytes, document: &Value) -> BusResult<Receipt> {
        // Schema problems first: they explain a missing routing key better than extraction.
        let mut issues = match &self.config().validator {
            Some(v) => v.validate(document),
            None => Vec::new(),
        };
        let env = if issues.is_empty() {
            Envelope::from_document(document, bytes.clone())
                .map_err(|found| issues = found)
                .ok()
        } else {
            None
        };
        match env {
            Some(env) => self.publish_routed(env, Some(document)).await,
            None => {
                let id = document
                    .pointer("/metadata/message_id")
                    .or_else(|| document.get("id"))
                    .and_then(Value::as_str);
                Err(reject(self, &bytes, id, issues).await)
            }
        }
    }

    /// Publishes an envelope built by the caller; its bytes are validated when a validator
    /// or routing rules need the document.
    async fn publish_envelope(&self, env: Envelope) -> BusResult<Receipt> {
        publish_checked(self, env).await
    }

    /// Routes an accepted envelope and stores it; used by `publish` and `publish_envelope`.
    async fn publish_routed(
        &self,
        mut env: Envelope,
        document: Option<&Value>,
    ) -> BusResult<Receipt> {
        if let Some(issue) = expired(&env, now_ms()) {
            let reason = DeadReason::Expired {
                expired_at_ms: env.expires_at_ms.unwrap_or_default(),
            };
            let id = self
                .record_rejected(&env.bytes, Some(&env.id), reason)
                .await?;
            return Err(BusError::Invalid {
                issues: vec![issue],
                dead_letter_id: id,
            });
        }
        let bindings = self.bindings().await?;
        let queues = resolve(&mut env, document, &self.config().rules, &bindings);
        if queues.is_empty() {
            let id = self
                .record_rejected(&env.bytes, Some(&env.id), DeadReason::NoRoute)
                .await?;
            let issue = Problem::expected(
                "/metadata/recipient_id",
                "a recipient or a binding matching the message",
                "no route",
            );
            return Err(BusError::Invalid {
                issues: vec![issue],
                dead_letter_id: id,
            });
        }
        let id = env.id.clone();
        let stored = self.store_owned(env, &queues, true).await?;
        Ok(Receipt {
            id,
            duplicate: !stored,
            queues,
        })
    }

    /// Receives up to `max` deliveries from `queue`, waiting up to `wait` for the first.
    ///
    /// Expired messages and messages past `max_deliver` never reach the caller: they become
    /// dead letters here, at delivery time.
    async fn receive(&self, queue: &str, max: usize, wait: Duration) -> BusResult<Vec<Delivery>> {
        let deadline = Instant::now() + wait;
        loop {
            let now = now_ms();
            // Filtered in place: the fetched batch is what the caller gets.
            let mut out = self.fetch(queue, max).await?;
            let mut i = 0;
            while let Some(d) = out.get(i) {
                if let Some(t) = d.envelope.expires_at_ms.filter(|&t| t <= now) {
                    self.dead_letter(d, DeadReason::Expired { expired_at_ms: t })
                        .await?;
                    out.remove(i);
                } else if d.attempt > self.config().max_deliver_for(queue) {
                    let attempts = d.attempt - 1;
                    self.dead_letter(d, DeadReason::MaxDeliver { attempts })
                        .await?;
                    out.remove(i);
                } else {
                    i += 1;
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if !out.is_empty() || left.is_zero() {
                return Ok(out);
            }
            self.wait_for(queue, left).await;
        }
    }

    /// Stores a dead letter again on its queue (with a fresh delivery count), or publishes
    /// refused bytes again, then deletes the dead letter.
    ///
    /// A dead letter that would be refused again (invalid, or past its expiration time) is
    /// refused with [`BusError::Invalid`] naming it, and stays as it was: one entry, not two.
    async fn replay(&self, dead_letter_id: &str) -> BusResult<Receipt> {
        let letter = self
            .find_dead_letter(dead_letter_id)
            .await?
            .ok_or_else(|| BusError::UnknownDeadLetter(dead_letter_id.to_owned()))?;
        if let Some(issue) = letter.envelope.as_ref().and_then(|e| expired(e, now_ms())) {
            return Err(BusError::Invalid {
                issues: vec![issue],
                dead_letter_id: dead_letter_id.to_owned(),
            });
        }
        let again = match (letter.envelope, letter.queue) {
            (Some(env), Some(queue)) => {
                let queues = vec![queue];
                self.store(&env, &queues, false).await?;
                Ok(Receipt {
                    id: env.id,
                    duplicate: false,
                    queues,
                })
            }
            (Some(env), None) => self.publish_envelope(env).await,
            (None, _) => self.publish(letter.bytes).await,
        };
        let receipt = match again {
            Ok(receipt) => receipt,
            Err(BusError::Invalid {
                issues,
                dead_letter_id: refused_again,
            }) => {
                // Refused again: the new dead letter is the old one over again.
                if refused_again != dead_letter_id {
                    self.remove_dead_letter(&refused_again).await?;
                }
                return Err(BusError::Invalid {
                    issues,
                    dead_letter_id: dead_letter_id.to_owned(),
                });
            }
            Err(e) => return Err(e),
        };
        self.remove_dead_letter(dead_letter_id).await?;
        Ok(receipt)
    }
}

/// Why `env` may not be published or replayed at `now_ms`: its expiration time has passed.
pub(crate) fn expired(env: &Envelope, now_ms: i64) -> Option<Problem> {
    let at = env.expires_at_ms.filter(|&t| t <= now_ms)?;
    let when = chrono::DateTime::from_timestamp_millis(at)
        .map_or_else(|| at.to_string(), |t| t.to_rfc3339());
    Some(
        Problem::expected(
            "/metadata/expiration_time",
            "a time still to come",
            format!("{when}, which has passed"),
        )
        .with_hint("set a later expiration_time, or leave it out for a message that never expires"),
    )
}

/// What `publish_envelope` does unless a backend takes a shorter way: validates the bytes when
/// a validator or routing rules need the document, then routes and stores.
pub(crate) async fn publish_checked<B: Bus + ?Sized>(bus: &B, env: Envelope) -> BusResult<Receipt> {
    let config = bus.config();
    if config.validator.is_none() && config.rules.is_empty() {
        return bus.publish_routed(env, None).await;
    }
    let document: Option<Value> = serde_json::from_slice(&env.bytes).ok();
    if let Some(v) = &config.validator {
        let issues = match &document {
            Some(doc) => v.validate(doc),
            None => vec![Problem::expected(
                "",
                "a JSON document",
                "bytes that are not JSON",
            )],
        };
        if !issues.is_empty() {
            return Err(reject(bus, &env.bytes, Some(&env.id), issues).await);
        }
    }
    bus.publish_routed(env, document.as_ref()).await
}

async fn reject<B: Bus + ?Sized>(
    bus: &B,
    bytes: &[u8],
    message_id: Option<&str>,
    issues: Vec<Problem>,
) -> BusError {
    let reason = DeadReason::Invalid {
        issues: issues.clone(),
    };
    match bus.record_rejected(bytes, message_id, reason).await {
        Ok(dead_letter_id) => BusError::Invalid {
            issues,
            dead_letter_id,
        },
        Err(e) => e,
    }
}

/// Runs `handler` for a delivery at most once per message id (for this handler name): the
/// id is committed together with the handler's effect, then the delivery is acknowledged.
///
/// A redelivery after a crash finds the id recorded, skips the handler and acknowledges.
/// A handler error nacks the delivery (redelivered at once) and is returned.
pub async fn handle_once<B, F, Fut>(
    bus: &B,
    delivery: &Delivery,
    handler: &str,
    f: F,
) -> BusResult<Handled>
where
    B: Bus + ?Sized,
    F: FnOnce(&Envelope) -> Fut,
    Fut: Future<Output = Result<Effect, String>>,
{
    let id = &delivery.envelope.id;
    if bus.already_handled(handler, id).await? {
        bus.ack(delivery).await?;
        return Ok(Handled::AlreadyDone);
    }
    let effect = match f(&delivery.envelope).await {
        Ok(effect) => effect,
        Err(e) => {
            bus.nack(delivery, Duration::ZERO).await?;
            return Err(BusError::Handler(e));
        }
    };
    let bindings = bus.bindings().await?;
    let outgoing: Vec<(Envelope, Vec<String>)> = effect
        .publish
        .into_iter()
        .map(|mut env| {
            let doc = serde_json::from_slice::<Value>(&env.bytes).ok();
            let queues = resolve(&mut env, doc.as_ref(), &bus.config().rules, &bindings);
            (env, queues)
        })
        .collect();
    let applied = bus
        .commit_once(handler, id, &effect.record, &outgoing)
        .await?;
    bus.ack(delivery).await?;
    Ok(if applied {
        Handled::Applied
    } else {
        Handled::AlreadyDone
    })
}
