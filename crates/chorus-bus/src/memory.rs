//! In-process backend: the same guarantees as the durable ones, for one process's lifetime.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;

use crate::bus::Bus;
use crate::config::{BusConfig, millis, now_ms};
use crate::delivery::{DeadLetter, DeadReason, Delivery, EffectRecord, LogEntry};
use crate::envelope::{Envelope, Rank};
use crate::error::{BusError, BusResult};
use crate::fair::FairScheduler;
use crate::routing::Binding;

/// The in-memory bus.
pub struct MemoryBus {
    config: BusConfig,
    state: Mutex<State>,
    arrived: Notify,
}

#[derive(Clone)]
struct Entry {
    env: Arc<Envelope>,
    attempts: u32,
}

struct Held {
    entry: Entry,
    deadline: i64,
}

#[derive(Default)]
struct Queue {
    ready: [VecDeque<Entry>; 4],
    delayed: Vec<(i64, Entry)>,
    held: HashMap<u64, Held>,
    deadlines: BinaryHeap<Reverse<(i64, u64)>>,
    scheduler: FairScheduler,
}

#[derive(Default)]
struct State {
    queues: HashMap<String, Queue>,
    seen: HashMap<String, i64>,
    seen_order: VecDeque<(i64, String)>,
    bindings: Vec<Binding>,
    log: Vec<Arc<Envelope>>,
    by_task: HashMap<String, Vec<usize>>,
    by_correlation: HashMap<String, Vec<usize>>,
    by_conversation: HashMap<String, Vec<usize>>,
    dead: Vec<DeadLetter>,
    next_dead: u64,
    handled: HashSet<(String, String)>,
    effects: Vec<EffectRecord>,
    next_token: u64,
}

impl MemoryBus {
    /// An empty in-memory bus.
    pub fn new(config: BusConfig) -> MemoryBus {
        MemoryBus {
            config,
            state: Mutex::new(State::default()),
            arrived: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data: every mutation is one step.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Queue {
    fn scheduler(weights: [u32; 4]) -> Queue {
        Queue {
            scheduler: FairScheduler::new(weights),
            ..Queue::default()
        }
    }

    fn push(&mut self, entry: Entry) {
        self.ready[entry.env.priority.rank() as usize].push_back(entry);
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
}

impl State {
    fn queue(&mut self, name: &str, weights: [u32; 4]) -> &mut Queue {
        self.queues
            .entry(name.to_owned())
            .or_insert_with(|| Queue::scheduler(weights))
    }

    fn is_duplicate(&mut self, id: &str, now: i64, window: i64) -> bool {
        while let Some((at, old)) = self.seen_order.front() {
            if *at >= now - window {
                break;
            }
            if self.seen.get(old) == Some(at) {
                self.seen.remove(old);
            }
            self.seen_order.pop_front();
        }
        self.seen.contains_key(id)
    }

    fn store(&mut self, env: &Envelope, queues: &[String], weights: [u32; 4], now: i64) {
        let env = Arc::new(env.clone());
        self.seen.insert(env.id.clone(), now);
        self.seen_order.push_back((now, env.id.clone()));
        let at = self.log.len();
        for (key, index) in [
            (&env.task_id, &mut self.by_task),
            (&env.correlation_id, &mut self.by_correlation),
            (&env.conversation_id, &mut self.by_conversation),
        ] {
            if let Some(k) = key {
                index.entry(k.clone()).or_default().push(at);
            }
        }
        self.log.push(env.clone());
        for q in queues {
            self.queue(q, weights).push(Entry {
                env: env.clone(),
                attempts: 0,
            });
        }
    }

    fn held_mut(&mut self, d: &Delivery) -> BusResult<(&mut Queue, u64)> {
        let stale = || BusError::StaleDelivery {
            token: d.token.clone(),
            message_id: d.envelope.id.clone(),
        };
        let token: u64 = d.token.parse().map_err(|_| stale())?;
        let q = self.queues.get_mut(&d.queue).ok_or_else(stale)?;
        if !q.held.contains_key(&token) {
            return Err(stale());
        }
        Ok((q, token))
    }

    fn envelopes(&self, indexes: Option<&Vec<usize>>) -> Vec<Envelope> {
        indexes
            .map(|ix| ix.iter().map(|&i| (*self.log[i]).clone()).collect())
            .unwrap_or_default()
    }
}

#[async_trait]
impl Bus for MemoryBus {
    fn config(&self) -> &BusConfig {
        &self.config
    }

    async fn bind(&self, binding: Binding) -> BusResult<()> {
        let mut s = self.lock();
        if !s.bindings.contains(&binding) {
            s.bindings.push(binding);
        }
        Ok(())
    }

    async fn bindings(&self) -> BusResult<Vec<Binding>> {
        Ok(self.lock().bindings.clone())
    }

    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        let now = now_ms();
        {
            let mut s = self.lock();
            if dedupe && s.is_duplicate(&env.id, now, millis(self.config.dedupe_window)) {
                return Ok(false);
            }
            s.store(env, queues, self.config.weights, now);
        }
        self.arrived.notify_waiters();
        Ok(true)
    }

    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>> {
        let now = now_ms();
        let deadline = now + millis(self.config.ack_wait);
        let mut s = self.lock();
        let mut token = s.next_token;
        let Some(q) = s.queues.get_mut(queue) else {
            return Ok(Vec::new());
        };
        q.release_due(now);
        let waiting = q.ready.each_ref().map(VecDeque::len);
        let plan = q.scheduler.plan(waiting, max);
        let mut out = Vec::with_capacity(plan.len());
        for p in plan {
            let Some(mut entry) = q.ready[p.rank() as usize].pop_front() else {
                continue;
            };
            entry.attempts += 1;
            token += 1;
            out.push(Delivery {
                envelope: entry.env.clone(),
                queue: queue.to_owned(),
                attempt: entry.attempts,
                token: token.to_string(),
            });
            q.deadlines.push(Reverse((deadline, token)));
            q.held.insert(token, Held { entry, deadline });
        }
        s.next_token = token;
        Ok(out)
    }

    async fn ack(&self, d: &Delivery) -> BusResult<()> {
        let mut s = self.lock();
        let (q, token) = s.held_mut(d)?;
        q.held.remove(&token);
        Ok(())
    }

    async fn nack(&self, d: &Delivery, delay: Duration) -> BusResult<()> {
        {
            let mut s = self.lock();
            let (q, token) = s.held_mut(d)?;
            if let Some(held) = q.held.remove(&token) {
                if delay.is_zero() {
                    q.push(held.entry);
                } else {
                    q.delayed.push((now_ms() + millis(delay), held.entry));
                }
            }
        }
        self.arrived.notify_waiters();
        Ok(())
    }

    async fn in_progress(&self, d: &Delivery) -> BusResult<()> {
        let deadline = now_ms() + millis(self.config.ack_wait);
        let mut s = self.lock();
        let (q, token) = s.held_mut(d)?;
        if let Some(h) = q.held.get_mut(&token) {
            h.deadline = deadline;
        }
        q.deadlines.push(Reverse((deadline, token)));
        Ok(())
    }

    async fn dead_letter(&self, d: &Delivery, reason: DeadReason) -> BusResult<()> {
        let mut s = self.lock();
        let (q, token) = s.held_mut(d)?;
        q.held.remove(&token);
        s.next_dead += 1;
        let letter = DeadLetter {
            id: s.next_dead.to_string(),
            message_id: Some(d.envelope.id.clone()),
            queue: Some(d.queue.clone()),
            reason,
            bytes: d.envelope.bytes.clone(),
            envelope: Some((*d.envelope).clone()),
        };
        s.dead.push(letter);
        Ok(())
    }

    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String> {
        let mut s = self.lock();
        s.next_dead += 1;
        let id = s.next_dead.to_string();
        s.dead.push(DeadLetter {
            id: id.clone(),
            message_id: message_id.map(str::to_owned),
            queue: None,
            reason,
            bytes: bytes.to_vec(),
            envelope: None,
        });
        Ok(id)
    }

    async fn dead_letters(&self) -> BusResult<Vec<DeadLetter>> {
        Ok(self.lock().dead.clone())
    }

    async fn remove_dead_letter(&self, id: &str) -> BusResult<()> {
        let mut s = self.lock();
        let before = s.dead.len();
        s.dead.retain(|d| d.id != id);
        if s.dead.len() == before {
            return Err(BusError::UnknownDeadLetter(id.to_owned()));
        }
        Ok(())
    }

    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool> {
        let key = (handler.to_owned(), message_id.to_owned());
        Ok(self.lock().handled.contains(&key))
    }

    async fn commit_once(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool> {
        let now = now_ms();
        {
            let mut s = self.lock();
            if !s
                .handled
                .insert((handler.to_owned(), message_id.to_owned()))
            {
                return Ok(false);
            }
            s.effects.push(EffectRecord {
                handler: handler.to_owned(),
                message_id: message_id.to_owned(),
                record: record.to_vec(),
            });
            let window = millis(self.config.dedupe_window);
            for (env, queues) in outgoing {
                if !s.is_duplicate(&env.id, now, window) {
                    s.store(env, queues, self.config.weights, now);
                }
            }
        }
        self.arrived.notify_waiters();
        Ok(true)
    }

    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>> {
        let s = self.lock();
        Ok(s.effects
            .iter()
            .filter(|e| e.handler == handler)
            .cloned()
            .collect())
    }

    async fn by_task(&self, task_id: &str) -> BusResult<Vec<Envelope>> {
        let s = self.lock();
        Ok(s.envelopes(s.by_task.get(task_id)))
    }

    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>> {
        let s = self.lock();
        Ok(s.envelopes(s.by_correlation.get(correlation_id)))
    }

    async fn conversation(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>> {
        let s = self.lock();
        let Some(ix) = s.by_conversation.get(conversation_id) else {
            return Ok(Vec::new());
        };
        Ok(ix
            .iter()
            .enumerate()
            .skip(usize::try_from(after).unwrap_or(usize::MAX))
            .take(limit)
            .map(|(i, &at)| LogEntry {
                seq: i as u64 + 1,
                envelope: (*s.log[at]).clone(),
            })
            .collect())
    }

    async fn wait_for(&self, _queue: &str, timeout: Duration) {
        let wake = self.arrived.notified();
        let _ = tokio::time::timeout(timeout.min(self.config.poll_interval * 10), wake).await;
    }
}
