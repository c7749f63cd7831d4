//! In-process backend: the same guarantees as the durable ones, for one process's lifetime.
//!
//! Each queue has its own lock, so publishers and consumers of different queues never wait
//! for each other, and a consumer's fetch or ack touches only its queue. The message log,
//! the dead letters and the handled ids have locks of their own, always taken in the order
//! handled → log → queue → dead.

mod retention;

use std::cmp::Reverse;
use std::collections::hash_map::Entry as Slot;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;

use crate::backend::Backend;
use crate::config::{BusConfig, millis, now_ms};
use crate::content::ContentDigest;
use crate::delivery::{
    DeadLetter, DeadReason, Delivery, EffectRecord, LogEntry, Logged, Receipt, TrackSummary,
};
use crate::envelope::{Envelope, Rank};
use crate::error::seen_again;
use crate::error::{BusError, BusResult};
use crate::fair::FairScheduler;
use crate::retention::{Page, PruneBefore, Pruned};
use crate::routing::{Binding, resolve};

/// A hash map with foldhash (randomly seeded per map) instead of SipHash: ids and queue
/// names are hashed on every publish, fetch and ack.
type FastMap<K, V> = HashMap<K, V, foldhash::quality::RandomState>;

mod peek;

/// The in-memory bus.
pub struct MemoryBus {
    config: BusConfig,
    queues: RwLock<FastMap<String, Arc<QueueCell>>>,
    log: Mutex<Log>,
    dead: Mutex<Dead>,
    handled: Mutex<HandledIds>,
    bindings: RwLock<Vec<Binding>>,
}

/// One queue: its name (shared by its deliveries), its state behind its own lock, and a
/// wake-up for its waiting consumers.
struct QueueCell {
    name: Arc<str>,
    state: Mutex<Queue>,
    arrived: Notify,
}

#[derive(Clone)]
struct Entry {
    env: Arc<Envelope>,
    attempts: u32,
    /// When the message was stored, Unix milliseconds.
    at: i64,
}

struct Held {
    entry: Entry,
    deadline: i64,
}

#[derive(Default)]
struct Queue {
    ready: [VecDeque<Entry>; 4],
    delayed: Vec<(i64, Entry)>,
    held: FastMap<u64, Held>,
    deadlines: BinaryHeap<Reverse<(i64, u64)>>,
    scheduler: FairScheduler,
    next_token: u64,
}

/// The stored messages that can be read back (those with a task, correlation or conversation
/// id), their tracking indexes, and the ids published within the dedupe window.
#[derive(Default)]
struct Log {
    ids: foldhash::quality::RandomState,
    seen: FastMap<SeenId, i64>,
    seen_order: VecDeque<(i64, SeenId)>,
    /// The logged messages with their publish times, oldest first; the first one is at log
    /// position `base` (positions count every message ever logged, pruned or not).
    log: VecDeque<(i64, Arc<Envelope>)>,
    base: usize,
    by_task: FastMap<String, Track>,
    by_correlation: FastMap<String, Track>,
    by_conversation: FastMap<String, Track>,
}

/// The log positions of one tracking key, the publish times of its first kept and its last
/// message, and how many of its entries were pruned (its conversation sequence numbers go on).
struct Track {
    at: VecDeque<usize>,
    first_ms: i64,
    last_ms: i64,
    pruned: u64,
}

impl Track {
    fn summary(&self, id: &str) -> TrackSummary {
        TrackSummary {
            id: id.to_owned(),
            messages: self.at.len() as u64,
            first_ms: self.first_ms,
            last_ms: self.last_ms,
        }
    }
}

/// A message id in the dedupe window, with its hash computed once (growing the map rehashes
/// without reading the id again). The id is read from the envelope, which the window keeps
/// alive: a message nothing else holds is freed when it leaves the window, on the publishing
/// thread (freeing it on a consumer thread as it is acknowledged cost about a fifth of the
/// throughput in the bench: glibc's allocator pays for frees of another thread's memory).
#[derive(Clone)]
struct SeenId {
    hash: u64,
    env: Arc<Envelope>,
}

impl PartialEq for SeenId {
    fn eq(&self, other: &SeenId) -> bool {
        self.hash == other.hash && self.env.id == other.env.id
    }
}

impl Eq for SeenId {}

impl Hash for SeenId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hash);
    }
}

/// The dead letters with the times they were recorded, oldest (and lowest id) first.
#[derive(Default)]
struct Dead {
    letters: VecDeque<(i64, DeadLetter)>,
    next: u64,
}

/// The handled marks, and the effect records with the times they were written, oldest first.
#[derive(Default)]
struct HandledIds {
    ids: HashSet<(String, String)>,
    effects: VecDeque<(i64, EffectRecord)>,
}

/// Locks a mutex; a panic while holding it leaves consistent data (every mutation is one step).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The error for a delivery this bus no longer holds.
fn stale(d: &Delivery) -> BusError {
    BusError::StaleDelivery {
        token: d.token.clone(),
        message_id: d.envelope.id.clone(),
    }
}

impl MemoryBus {
    /// An empty in-memory bus.
    pub fn new(config: BusConfig) -> MemoryBus {
        MemoryBus {
            config,
            queues: RwLock::default(),
            log: Mutex::default(),
            dead: Mutex::default(),
            handled: Mutex::default(),
            bindings: RwLock::default(),
        }
    }

    /// The queue named `name`, created empty on first use.
    fn cell(&self, name: &str) -> Arc<QueueCell> {
        if let Some(c) = self
            .queues
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
        {
            return c.clone();
        }
        let mut all = self.queues.write().unwrap_or_else(|p| p.into_inner());
        all.entry(name.to_owned())
            .or_insert_with(|| {
                Arc::new(QueueCell {
                    name: Arc::from(name),
                    state: Mutex::new(Queue {
                        scheduler: FairScheduler::new(self.config.weights),
                        ..Queue::default()
                    }),
                    arrived: Notify::new(),
                })
            })
            .clone()
    }

    /// The queue named `name` when it exists.
    fn existing(&self, name: &str) -> Option<Arc<QueueCell>> {
        self.queues
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// Logs `env` and adds it to `queues` unless its id was seen (when `dedupe`): false for a
    /// duplicate, a conflict for other content; the caller holds the log lock so that two
    /// publishes of one id cannot both pass.
    fn store_locked(
        &self,
        log: &mut Log,
        env: Arc<Envelope>,
        queues: &[String],
        dedupe: bool,
        now: i64,
    ) -> BusResult<bool> {
        if !log.admit(&env, now, millis(self.config.dedupe_window), dedupe)? {
            return Ok(false);
        }
        for q in queues {
            let cell = self.cell(q);
            let was_empty = {
                let mut queue = lock(&cell.state);
                let was_empty = !queue.has_ready();
                queue.push(Entry {
                    env: env.clone(),
                    attempts: 0,
                    at: now,
                });
                was_empty
            };
            // One consumer is woken when the queue fills; a fetch leaving messages behind
            // wakes the next, so a burst costs a few wake-ups rather than one per message.
            if was_empty {
                cell.arrived.notify_one();
            }
        }
        Ok(true)
    }

    /// Stores `env` now (see [`MemoryBus::store_locked`]).
    fn store_now(&self, env: Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        let env = Arc::new(env);
        let mut log = lock(&self.log);
        self.store_locked(&mut log, env, queues, dedupe, now_ms())
    }

    /// Runs `f` on the queue holding delivery `d`, or reports the delivery as stale.
    fn with_held<T>(
        &self,
        d: &Delivery,
        f: impl FnOnce(&mut Queue, u64) -> T,
    ) -> BusResult<(T, Arc<QueueCell>)> {
        let token: u64 = d.token.parse().map_err(|_| stale(d))?;
        let cell = self.existing(&d.queue).ok_or_else(|| stale(d))?;
        let out = {
            let mut q = lock(&cell.state);
            if !q.held.contains_key(&token) {
                return Err(stale(d));
            }
            f(&mut q, token)
        };
        Ok((out, cell))
    }
}

impl Queue {
    fn push(&mut self, entry: Entry) {
        self.ready[entry.env.priority.rank() as usize].push_back(entry);
    }

    fn has_ready(&self) -> bool {
        self.ready.iter().any(|l| !l.is_empty())
    }

    /// When the next held delivery's lease ends or delayed entry is due, Unix ms (a lease
    /// settled since may still be counted: at worst one early look).
    fn next_due(&self) -> Option<i64> {
        let lease = self.deadlines.peek().map(|Reverse((at, _))| *at);
        let delayed = self.delayed.iter().map(|(at, _)| *at).min();
        lease.into_iter().chain(delayed).min()
    }

    /// Returns overdue held deliveries and due delayed ones to the ready lists.
    fn release_due(&mut self, now: i64) {
        while let Some(&Reverse((deadline, token))) = self.deadlines.peek() {
            if deadline > now {
                break;
            }
            self.deadlines.pop();
            if self
                .held
                .get(&token)
                .is_some_and(|h| h.deadline == deadline)
            {
                let held = self.held.remove(&token).map(|h| h.entry);
                if let Some(entry) = held {
                    self.ready[entry.env.priority.rank() as usize].push_front(entry);
                }
            }
        }
        if !self.delayed.is_empty() {
            let (due, later): (Vec<_>, Vec<_>) =
                self.delayed.drain(..).partition(|(at, _)| *at <= now);
            self.delayed = later;
            for (_, entry) in due {
                self.push(entry);
            }
        }
    }

    /// Claims up to `max` ready entries in fair priority order.
    fn claim(&mut self, queue: &Arc<str>, max: usize, now: i64, deadline: i64) -> Vec<Delivery> {
        self.release_due(now);
        let waiting = self.ready.each_ref().map(VecDeque::len);
        let plan = self.scheduler.plan(waiting, max);
        let mut out = Vec::with_capacity(plan.len());
        for p in plan {
            let Some(mut entry) = self.ready[p.rank() as usize].pop_front() else {
                continue;
            };
            entry.attempts += 1;
            self.next_token += 1;
            let token = self.next_token;
            out.push(Delivery {
                envelope: entry.env.clone(),
                queue: queue.clone(),
                attempt: entry.attempts,
                token: token.to_string(),
            });
            self.held.insert(token, Held { entry, deadline });
            self.watch(token, deadline);
        }
        out
    }

    /// Watches the ack deadline of held delivery `token`. Settled deliveries leave their
    /// deadlines behind; when those outnumber the held ones, the heap is rebuilt from what is
    /// held, so that its size follows the deliveries in flight, not the ack wait's traffic.
    fn watch(&mut self, token: u64, deadline: i64) {
        self.deadlines.push(Reverse((deadline, token)));
        if self.deadlines.len() > 2 * self.held.len() + 64 {
            self.deadlines = self
                .held
                .iter()
                .map(|(&token, held)| Reverse((held.deadline, token)))
                .collect();
        }
    }
}

impl Log {
    /// Logs `env`, unless `dedupe` is set and its id was logged within `window`: then it logs
    /// nothing and returns false for the same content, a conflict for other content. The id is
    /// hashed once; the contents are compared only when an id comes again.
    fn admit(
        &mut self,
        env: &Arc<Envelope>,
        now: i64,
        window: i64,
        dedupe: bool,
    ) -> BusResult<bool> {
        while self
            .seen_order
            .front()
            .is_some_and(|(at, _)| *at < now - window)
        {
            if let Some((at, old)) = self.seen_order.pop_front()
                && let Slot::Occupied(slot) = self.seen.entry(old)
                && *slot.get() == at
            {
                slot.remove();
            }
        }
        let id = SeenId {
            hash: self.ids.hash_one(env.id.as_str()),
            env: env.clone(),
        };
        match self.seen.entry(id.clone()) {
            Slot::Occupied(slot) if dedupe => return same_content(&slot.key().env, env),
            Slot::Occupied(slot) => {
                // The id's window starts again, with this content.
                slot.remove_entry();
                self.seen.insert(id.clone(), now);
            }
            Slot::Vacant(slot) => {
                slot.insert(now);
            }
        }
        self.seen_order.push_back((now, id));
        self.record(env, now);
        Ok(true)
    }

    /// A conflict when `env`'s id was logged within `window` with other content.
    fn check(&self, env: &Envelope, now: i64, window: i64) -> BusResult<()> {
        let id = SeenId {
            hash: self.ids.hash_one(env.id.as_str()),
            env: Arc::new(Envelope::new(env.id.clone(), Vec::new(), env.bytes.clone())),
        };
        match self.seen.get_key_value(&id) {
            Some((old, &at)) if at >= now - window => same_content(&old.env, env).map(drop),
            _ => Ok(()),
        }
    }

    /// Appends `env`, published at `now`, to the log and its tracking indexes; a message
    /// without a tracking key could never be read back, so only the dedupe window holds it.
    fn record(&mut self, env: &Arc<Envelope>, now: i64) {
        if env.task_id.is_none() && env.correlation_id.is_none() && env.conversation_id.is_none() {
            return;
        }
        let at = self.base + self.log.len();
        for (key, index) in [
            (&env.task_id, &mut self.by_task),
            (&env.correlation_id, &mut self.by_correlation),
            (&env.conversation_id, &mut self.by_conversation),
        ] {
            if let Some(k) = key {
                let track = index.entry(k.clone()).or_insert_with(|| Track {
                    at: VecDeque::new(),
                    first_ms: now,
                    last_ms: now,
                    pruned: 0,
                });
                track.at.push_back(at);
                track.last_ms = track.last_ms.max(now);
            }
        }
        self.log.push_back((now, env.clone()));
    }

    /// The message stored under `id`: from the dedupe window, else the newest logged one.
    fn locate(&self, id: &str) -> Option<Logged> {
        let key = SeenId {
            hash: self.ids.hash_one(id),
            env: Arc::new(Envelope::new(
                id.to_owned(),
                Vec::new(),
                bytes::Bytes::new(),
            )),
        };
        if let Some((seen, &at)) = self.seen.get_key_value(&key) {
            return Some(Logged {
                envelope: (*seen.env).clone(),
                published_ms: at,
            });
        }
        self.log
            .iter()
            .rev()
            .find(|(_, env)| env.id == id)
            .map(|(at, env)| Logged {
                envelope: (**env).clone(),
                published_ms: *at,
            })
    }

    /// The logged message at log position `at`.
    fn entry(&self, at: usize) -> &(i64, Arc<Envelope>) {
        &self.log[at - self.base]
    }

    fn envelopes(&self, track: Option<&Track>) -> Vec<Envelope> {
        track
            .map(|t| t.at.iter().map(|&i| (*self.entry(i).1).clone()).collect())
            .unwrap_or_default()
    }
}

/// Publishing `new` again when `old` was stored under its id: false (a duplicate) for the same
/// content, else a conflict. Byte-equal bodies (a retry sending the same bytes) are not parsed.
fn same_content(old: &Envelope, new: &Envelope) -> BusResult<bool> {
    if old.bytes == new.bytes {
        return Ok(false);
    }
    seen_again(
        &new.id,
        ContentDigest::of(&old.bytes),
        ContentDigest::of(&new.bytes),
    )
}

impl Queue {
    /// Messages held in this queue and not acknowledged: ready, delayed or being handled.
    fn depth(&self) -> u64 {
        let ready: usize = self.ready.iter().map(VecDeque::len).sum();
        (ready + self.delayed.len() + self.held.len()) as u64
    }
}

#[async_trait]
impl Backend for MemoryBus {
    fn config(&self) -> &BusConfig {
        &self.config
    }

    async fn bind(&self, binding: Binding) -> BusResult<()> {
        let mut all = self.bindings.write().unwrap_or_else(|p| p.into_inner());
        if !all.contains(&binding) {
            all.push(binding);
        }
        Ok(())
    }

    async fn bindings(&self) -> BusResult<Vec<Binding>> {
        Ok(self
            .bindings
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone())
    }

    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        self.store_owned(env.clone(), queues, dedupe).await
    }

    async fn store_owned(&self, env: Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        let stored = self.store_now(env, queues, dedupe)?;
        // A publisher that never waits on anything else still lets the consumers it woke run.
        tokio::task::consume_budget().await;
        Ok(stored)
    }

    #[allow(clippy::result_large_err)] // as in the trait: the envelope comes back by value
    fn store_routed_now(&self, mut env: Envelope) -> Result<BusResult<Receipt>, Envelope> {
        let queues = resolve(
            &mut env,
            None,
            &[],
            &self.bindings.read().unwrap_or_else(|p| p.into_inner()),
        );
        if queues.is_empty() {
            return Err(env);
        }
        let id = env.id.clone();
        Ok(self.store_now(env, &queues, true).map(|stored| Receipt {
            id,
            duplicate: !stored,
            queues,
        }))
    }

    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>> {
        let Some(cell) = self.existing(queue) else {
            return Ok(Vec::new());
        };
        let now = now_ms();
        let deadline = now + millis(self.config.ack_wait_for(queue));
        let (out, more) = {
            let mut q = lock(&cell.state);
            let out = q.claim(&cell.name, max, now, deadline);
            (out, q.has_ready())
        };
        if more {
            // Hand the rest to another waiting consumer.
            cell.arrived.notify_one();
        }
        Ok(out)
    }

    async fn ack(&self, d: &Delivery) -> BusResult<()> {
        self.with_held(d, |q, token| {
            q.held.remove(&token);
        })?;
        Ok(())
    }

    async fn ack_all(&self, deliveries: &[Delivery]) -> BusResult<()> {
        let mut first_error = None;
        for run in deliveries.chunk_by(|a, b| a.queue == b.queue) {
            let cell = self.existing(&run[0].queue);
            let mut q = cell.as_ref().map(|c| lock(&c.state));
            for d in run {
                let settled = match (q.as_mut(), d.token.parse::<u64>()) {
                    (Some(q), Ok(token)) => q.held.remove(&token).is_some(),
                    _ => false,
                };
                if !settled {
                    first_error.get_or_insert_with(|| stale(d));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    async fn nack(&self, d: &Delivery, delay: Duration) -> BusResult<()> {
        let ((), cell) = self.with_held(d, |q, token| {
            if let Some(held) = q.held.remove(&token) {
                if delay.is_zero() {
                    q.push(held.entry);
                } else {
                    q.delayed.push((now_ms() + millis(delay), held.entry));
                }
            }
        })?;
        cell.arrived.notify_one();
        Ok(())
    }

    async fn in_progress(&self, d: &Delivery) -> BusResult<()> {
        let deadline = now_ms() + millis(self.config.ack_wait_for(&d.queue));
        self.with_held(d, |q, token| {
            if let Some(h) = q.held.get_mut(&token) {
                h.deadline = deadline;
            }
            q.watch(token, deadline);
        })?;
        Ok(())
    }

    async fn dead_letter(&self, d: &Delivery, reason: DeadReason) -> BusResult<()> {
        self.with_held(d, |q, token| {
            q.held.remove(&token);
            // Still under the queue lock: nobody sees the message neither queued nor dead.
            let mut dead = lock(&self.dead);
            dead.next += 1;
            let now = now_ms();
            let letter = DeadLetter {
                id: dead.next.to_string(),
                message_id: Some(d.envelope.id.clone()),
                queue: Some(d.queue.to_string()),
                reason,
                bytes: d.envelope.bytes.to_vec(),
                envelope: Some((*d.envelope).clone()),
                at_ms: Some(now),
            };
            dead.letters.push_back((now, letter));
        })?;
        Ok(())
    }

    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String> {
        let mut dead = lock(&self.dead);
        dead.next += 1;
        let id = dead.next.to_string();
        let now = now_ms();
        let letter = DeadLetter {
            id: id.clone(),
            message_id: message_id.map(str::to_owned),
            queue: None,
            reason,
            bytes: bytes.to_vec(),
            envelope: None,
            at_ms: Some(now),
        };
        dead.letters.push_back((now, letter));
        Ok(id)
    }

    async fn dead_letters_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        self.dead_page(after, limit)
    }

    async fn find_dead_letter(&self, id: &str) -> BusResult<Option<DeadLetter>> {
        let dead = lock(&self.dead);
        Ok(dead
            .letters
            .iter()
            .find(|(_, d)| d.id == id)
            .map(|(_, d)| d.clone()))
    }

    async fn dead_letters_of(&self, message_id: &str) -> BusResult<Vec<DeadLetter>> {
        let dead = lock(&self.dead);
        Ok(dead
            .letters
            .iter()
            .filter(|(_, d)| d.queue.is_some() && d.message_id.as_deref() == Some(message_id))
            .map(|(_, d)| d.clone())
            .collect())
    }

    async fn dead_letter_count(&self) -> BusResult<u64> {
        Ok(lock(&self.dead).letters.len() as u64)
    }

    async fn remove_dead_letter(&self, id: &str) -> BusResult<()> {
        let mut dead = lock(&self.dead);
        let before = dead.letters.len();
        dead.letters.retain(|(_, d)| d.id != id);
        if dead.letters.len() == before {
            return Err(BusError::UnknownDeadLetter(id.to_owned()));
        }
        Ok(())
    }

    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool> {
        let key = (handler.to_owned(), message_id.to_owned());
        Ok(lock(&self.handled).ids.contains(&key))
    }

    async fn commit_once(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool> {
        let now = now_ms();
        let key = (handler.to_owned(), message_id.to_owned());
        let mut handled = lock(&self.handled);
        if handled.ids.contains(&key) {
            return Ok(false);
        }
        let mut log = lock(&self.log);
        // An outgoing message whose id holds other content fails the commit before any change.
        let window = millis(self.config.dedupe_window);
        for (env, _) in outgoing {
            log.check(env, now, window)?;
        }
        handled.ids.insert(key);
        let effect = EffectRecord {
            handler: handler.to_owned(),
            message_id: message_id.to_owned(),
            record: record.to_vec(),
        };
        handled.effects.push_back((now, effect));
        for (env, queues) in outgoing {
            self.store_locked(&mut log, Arc::new(env.clone()), queues, true, now)?;
        }
        Ok(true)
    }

    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>> {
        Ok(lock(&self.handled)
            .effects
            .iter()
            .filter(|(_, e)| e.handler == handler)
            .map(|(_, e)| e.clone())
            .collect())
    }

    async fn task_messages(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>> {
        self.task_page(task_id, after, limit)
    }

    async fn locate(&self, id: &str) -> BusResult<Option<Logged>> {
        Ok(lock(&self.log).locate(id))
    }

    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>> {
        let log = lock(&self.log);
        Ok(log.envelopes(log.by_correlation.get(correlation_id)))
    }

    async fn conversation(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>> {
        let log = lock(&self.log);
        let Some(track) = log.by_conversation.get(conversation_id) else {
            return Ok(Vec::new());
        };
        // Sequence numbers count the pruned entries too: a reader's cursor stays valid.
        let skip = after.saturating_sub(track.pruned);
        Ok(track
            .at
            .iter()
            .zip(track.pruned + 1..)
            .skip(usize::try_from(skip).unwrap_or(usize::MAX))
            .take(limit)
            .map(|(&at, seq)| LogEntry {
                seq,
                envelope: (*log.entry(at).1).clone(),
            })
            .collect())
    }

    async fn tasks_page(&self, after: Option<&str>, limit: usize) -> BusResult<Page<TrackSummary>> {
        let summaries = retention::summaries(&lock(&self.log).by_task);
        crate::retention::track_page(summaries, after, limit)
    }

    async fn conversations_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        let summaries = retention::summaries(&lock(&self.log).by_conversation);
        crate::retention::track_page(summaries, after, limit)
    }

    async fn prune(&self, before: PruneBefore) -> BusResult<Pruned> {
        Ok(self.prune_now(before, now_ms()))
    }

    async fn oldest_waiting_ms(&self) -> BusResult<Option<i64>> {
        Ok(self.oldest_waiting())
    }

    async fn depth(&self, queue: &str) -> BusResult<u64> {
        Ok(self
            .existing(queue)
            .map_or(0, |cell| lock(&cell.state).depth()))
    }

    async fn peek(&self, queue: &str, limit: usize) -> BusResult<Vec<crate::peek::Queued>> {
        Ok(self
            .existing(queue)
            .map_or_else(Vec::new, |cell| peek::queued(&cell, limit)))
    }

    async fn wait_for(&self, queue: &str, timeout: Duration) {
        let cell = self.cell(queue);
        let wake = cell.arrived.notified();
        tokio::pin!(wake);
        // Armed before the look at the queue, so that a publish in between is not missed.
        wake.as_mut().enable();
        // Until woken by a publish or nack, or until the next lease ends or delayed message is
        // due: an idle queue is not looked at again (1,000 idle inbox streams cost 4-6 % of a
        // core when every wait was capped at ten poll intervals).
        let until = match lock(&cell.state).next_due() {
            Some(at) => Duration::from_millis(u64::try_from(at - now_ms()).unwrap_or(0) + 1),
            None => timeout,
        };
        let _ = tokio::time::timeout(until.min(timeout), wake).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Bus;

    fn bus(window_ms: u64) -> MemoryBus {
        MemoryBus::new(BusConfig {
            dedupe_window: Duration::from_millis(window_ms),
            validator: None,
            ..BusConfig::default()
        })
    }

    fn stored(id: &str) -> (Envelope, Vec<String>) {
        let env = Envelope::new(id, vec!["q".into()], b"{}".to_vec());
        (env, vec!["q".to_owned()])
    }

    #[tokio::test]
    async fn an_id_is_refused_within_the_window_and_accepted_after_it() {
        let bus = bus(200);
        let (env, queues) = stored("m1");
        assert!(bus.store(&env, &queues, true).await.unwrap());
        assert!(!bus.store(&env, &queues, true).await.unwrap());
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(bus.store(&env, &queues, true).await.unwrap());
        assert_eq!(bus.fetch("q", 10).await.unwrap().len(), 2);
    }

    #[tokio::test]
    async fn settled_deliveries_leave_no_deadlines_behind_and_overdue_ones_still_return() {
        let bus = MemoryBus::new(BusConfig {
            ack_wait: Duration::from_millis(300),
            validator: None,
            ..BusConfig::default()
        });
        let queues = vec!["q".to_owned()];
        bus.store(
            &Envelope::new("kept", queues.clone(), b"{}".to_vec()),
            &queues,
            true,
        )
        .await
        .unwrap();
        let kept = bus.fetch("q", 1).await.unwrap();
        for i in 0..5000 {
            let env = Envelope::new(format!("m{i}"), queues.clone(), b"{}".to_vec());
            bus.store(&env, &queues, true).await.unwrap();
            let got = bus.fetch("q", 1).await.unwrap();
            bus.ack_all(&got).await.unwrap();
        }
        let watched = lock(&bus.existing("q").unwrap().state).deadlines.len();
        assert!(
            watched <= 2 + 64,
            "{watched} deadlines watched for 1 held delivery"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        let again = bus.fetch("q", 10).await.unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(
            (again[0].envelope.id.as_str(), again[0].attempt),
            ("kept", 2)
        );
        assert!(
            bus.ack(&kept[0]).await.is_err(),
            "the first delivery is stale"
        );
    }

    #[tokio::test]
    async fn an_untracked_message_is_freed_once_acknowledged_and_out_of_the_window() {
        let bus = bus(100);
        let queues = vec!["q".to_owned()];
        let mut tracked = Envelope::new("t1", queues.clone(), b"{}".to_vec());
        tracked.task_id = Some("task-1".into());
        for env in [Envelope::new("u1", queues.clone(), b"{}".to_vec()), tracked] {
            assert!(bus.store(&env, &queues, true).await.unwrap());
        }
        let got = bus.fetch("q", 10).await.unwrap();
        let kept: Vec<_> = got.iter().map(|d| Arc::downgrade(&d.envelope)).collect();
        bus.ack_all(&got).await.unwrap();
        drop(got);
        tokio::time::sleep(Duration::from_millis(150)).await;
        // The next publish moves the window past both ids.
        let later = Envelope::new("u2", queues.clone(), b"{}".to_vec());
        assert!(bus.store(&later, &queues, true).await.unwrap());
        assert!(
            kept[0].upgrade().is_none(),
            "the untracked message was freed"
        );
        assert!(
            kept[1].upgrade().is_some(),
            "the task's message stays readable"
        );
        assert_eq!(bus.by_task("task-1").await.unwrap()[0].id, "t1");
    }

    #[tokio::test]
    async fn a_store_without_dedupe_restarts_the_window_of_its_id() {
        let bus = bus(1000);
        let (env, queues) = stored("m1");
        assert!(bus.store(&env, &queues, true).await.unwrap());
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(bus.store(&env, &queues, false).await.unwrap());
        tokio::time::sleep(Duration::from_millis(700)).await;
        // The first store left the window; the second did not.
        assert!(!bus.store(&env, &queues, true).await.unwrap());
        assert_eq!(bus.fetch("q", 10).await.unwrap().len(), 2);
    }
}
