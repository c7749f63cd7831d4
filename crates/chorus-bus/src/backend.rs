//! The `Backend` trait: the storage primitives a store implements for the [`Bus`](crate::Bus).

use std::time::Duration;

use async_trait::async_trait;

use crate::config::BusConfig;
use crate::delivery::{
    DeadLetter, DeadReason, Delivery, EffectRecord, LogEntry, Logged, Receipt, TrackSummary,
};
use crate::envelope::Envelope;
use crate::error::BusResult;
use crate::peek::Queued;
use crate::retention::{Page, PruneBefore, Pruned};
use crate::routing::Binding;

/// A store under the bus: durable queues, logs, dead letters and effect records.
///
/// A backend keeps what it is given and answers what it holds: each method is one storage step
/// (atomic where its doc says so). Validation, routing, expiration, the delivery limit and
/// replay are not its business: [`Bus`](crate::Bus) provides them once, for every backend,
/// through a blanket implementation that no backend can override. Deduplication is the one
/// guarantee a backend keeps itself, inside [`Backend::store`], because only the store can
/// check an id and store its message in one atomic step.
#[async_trait]
pub trait Backend: Send + Sync {
    /// The delivery settings.
    fn config(&self) -> &BusConfig;

    /// Adds a durable subscription (idempotent). This bus's publishes route by it at once;
    /// other processes sharing the store see it within a second (they cache the bindings).
    async fn bind(&self, binding: Binding) -> BusResult<()>;

    /// All subscriptions.
    async fn bindings(&self) -> BusResult<Vec<Binding>>;

    /// stores the message durably in `queues` and in the logs, and remembers its id
    /// with the digest of its content for the dedupe window.
    ///
    /// When `dedupe` is set and the id was stored within the window, nothing is stored: it
    /// returns false for the same content (a duplicate) and [`BusError::Conflict`] for other
    /// content (see [`ContentDigest`](crate::ContentDigest)). Without `dedupe` it always
    /// stores, and the id's window starts again with this content.
    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool>;

    /// Like [`Backend::store`], taking the envelope by value, so that a backend keeping it in
    /// memory need not copy it.
    async fn store_owned(&self, env: Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        self.store(&env, queues, dedupe).await
    }

    /// claims up to `max` visible messages of `queue`, in fair priority order,
    /// without waiting; each claim counts as one delivery attempt.
    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>>;

    /// Acknowledges: the message is done and will not be delivered again on this queue.
    async fn ack(&self, delivery: &Delivery) -> BusResult<()>;

    /// Acknowledges every delivery (concurrently, or settled together by the backend); on
    /// failure, the first error, after trying all of them.
    async fn ack_all(&self, deliveries: &[Delivery]) -> BusResult<()> {
        self.ack_each(deliveries).await.into_iter().collect()
    }

    /// Acknowledges every delivery as [`Backend::ack`] would (concurrently, or settled together
    /// by the backend); one result each, in their order.
    async fn ack_each(&self, deliveries: &[Delivery]) -> Vec<BusResult<()>> {
        futures::future::join_all(deliveries.iter().map(|d| self.ack(d))).await
    }

    /// Negative acknowledgement: deliver again after `delay`.
    async fn nack(&self, delivery: &Delivery, delay: Duration) -> BusResult<()>;

    /// Still working: restarts the ack deadline.
    async fn in_progress(&self, delivery: &Delivery) -> BusResult<()>;

    /// Removes the delivery from its queue and records it as a dead letter, atomically.
    async fn dead_letter(&self, delivery: &Delivery, reason: DeadReason) -> BusResult<()>;

    /// records bytes refused on publish as a dead letter; returns its id.
    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String>;

    /// Up to `limit` dead letters, oldest first, after the one whose id is `after` (from the
    /// oldest when `None`); `total` is their number.
    async fn dead_letters_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>>;

    /// The dead letter with this id, if there is one.
    async fn find_dead_letter(&self, id: &str) -> BusResult<Option<DeadLetter>>;

    /// The dead letters still kept (not removed, not pruned) that deliveries of message
    /// `message_id` became, one per queue copy given up, oldest first; found by an index of the
    /// store, not a scan (the memory store scans). Letters refused on publish are not among
    /// them: anyone can publish bytes naming any id.
    async fn dead_letters_of(&self, message_id: &str) -> BusResult<Vec<DeadLetter>>;

    /// How many dead letters there are, without reading them (for a watcher polling it).
    async fn dead_letter_count(&self) -> BusResult<u64>;

    /// deletes a dead letter (after it was replayed).
    async fn remove_dead_letter(&self, id: &str) -> BusResult<()>;

    /// true when `handler` already committed an effect for `message_id`.
    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool>;

    /// atomically records `message_id` as handled by `handler` together with the
    /// effect record and the routed outgoing messages; false when it was already recorded.
    async fn commit_once(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool>;

    /// [`Backend::commit_once`] of `message_id` (the message of `delivery`, or a key of the
    /// handler's own for its handling), then [`Backend::ack`] of `delivery`. A store that can
    /// do both in one transaction does (PostgreSQL): the effect record, its outgoing messages
    /// and the settled delivery commit together, so none is ever kept without the others. When
    /// the delivery is no longer held (its lease ran out), the effect is still recorded (it
    /// happened) and the answer is [`BusError::StaleDelivery`](crate::BusError::StaleDelivery).
    async fn commit_once_and_ack(
        &self,
        delivery: &Delivery,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool> {
        let applied = self
            .commit_once(handler, message_id, record, outgoing)
            .await?;
        self.ack(delivery).await?;
        Ok(applied)
    }

    /// The committed effects of `handler`, in commit order.
    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>>;

    /// How many effects `handler` has committed (and the pruner has not removed).
    async fn effect_count(&self, handler: &str) -> BusResult<u64> {
        Ok(self.effects(handler).await?.len() as u64)
    }

    /// Up to `limit` stored messages of a task in publish order, with their publish times,
    /// after cursor `after` (the `next` of the page before; `None` for the first page).
    async fn task_messages(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>>;

    /// The message stored under `id`, with its publish time (the latest, when the id was
    /// stored again), while the store keeps it: every message with a task, correlation or
    /// conversation id until its log entry is pruned; other messages as far as the store keeps
    /// them (SQLite until pruned, memory and Redis within the dedupe window).
    async fn locate(&self, id: &str) -> BusResult<Option<Logged>>;

    /// Every stored message of a correlation id, in publish order.
    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>>;

    /// The conversation's event log after sequence number `after` (0 for the start).
    async fn conversation(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>>;

    /// Up to `limit` known tasks, most recently active first (then by id, descending), after
    /// cursor `after`; a task active while the pages are read may move to an earlier page.
    async fn tasks_page(&self, after: Option<&str>, limit: usize) -> BusResult<Page<TrackSummary>>;

    /// Up to `limit` known conversations, in the order of [`Backend::tasks_page`].
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

    /// Whether a settle of a delivery whose lease ended is refused by the store when the
    /// message was delivered again since ([`BusError::StaleDelivery`](crate::BusError)). A store
    /// that cannot tell (JetStream acknowledges a message by its sequence, whichever delivery
    /// the ack names) answers false: the caller must refuse such settles itself, or an ack
    /// answered as done may come after the message went out again.
    fn refuses_stale_settles(&self) -> bool {
        true
    }

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

    /// Routes `env` by the bindings this process holds and stores it, without awaiting
    /// anything, when the store can (its bindings and queues live in memory); `Err(env)` hands
    /// the envelope back for the general path, which is also the default. The bus calls it
    /// only for an envelope that is not expired and has nothing to validate, and records an
    /// unroutable one itself.
    // The envelope comes back by value (a move, no allocation): boxing it to please the lint
    // would allocate on every publish of the stores that take the general path.
    #[allow(clippy::result_large_err)]
    fn store_routed_now(&self, env: Envelope) -> Result<BusResult<Receipt>, Envelope> {
        Err(env)
    }
}
