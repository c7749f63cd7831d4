//! The embedded durable default: one SQLite file in WAL mode, fsync'd group commit.

mod errors;
mod floor;
mod pages;
mod peek;
mod retention;
mod schema;
mod seen;
mod writer;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::Connection;

use crate::backend::Backend;
use crate::binding_cache::BindingCache;
use crate::config::{BusConfig, millis, now_ms};
use crate::delivery::{
    DeadLetter, DeadReason, Delivery, EffectRecord, LogEntry, Logged, TrackSummary,
};
use crate::envelope::Envelope;
use crate::error::BusResult;
use crate::fair::FairScheduler;
use crate::retention::{Page, PruneBefore, Pruned};
use crate::routing::Binding;
use crate::wakers::Wakers;
use schema::Key;
use seen::Seen;
use writer::Writer;

pub use floor::floor;

/// Operations committed together at most; 1 gives one fsync per operation.
pub const DEFAULT_MAX_BATCH: usize = 1024;

/// A bus stored in one SQLite file; several processes may open the same file.
pub struct SqliteBus {
    config: BusConfig,
    writer: Arc<Writer>,
    schedulers: Arc<Mutex<HashMap<String, FairScheduler>>>,
    binding_cache: BindingCache,
    wakers: Arc<Wakers>,
}

/// How often the file is checked for commits of other processes (one query a second, however
/// many consumers wait): a message another process stores is seen within about this long.
const OTHER_PROCESSES: Duration = Duration::from_secs(1);

impl SqliteBus {
    /// Opens (or creates) the bus file, checking it for damage first.
    pub fn open(path: impl AsRef<Path>, config: BusConfig) -> BusResult<SqliteBus> {
        SqliteBus::open_with_batch(path, config, DEFAULT_MAX_BATCH)
    }

    /// Like [`SqliteBus::open`], committing at most `max_batch` operations per fsync.
    pub fn open_with_batch(
        path: impl AsRef<Path>,
        config: BusConfig,
        max_batch: usize,
    ) -> BusResult<SqliteBus> {
        let path = path.as_ref();
        let conn = Connection::open(path).map_err(schema::storage_error)?;
        schema::open(&conn)?;
        let bus = SqliteBus {
            config,
            writer: Arc::new(Writer::spawn(conn, max_batch)?),
            schedulers: Arc::default(),
            binding_cache: BindingCache::default(),
            wakers: Wakers::of(path),
        };
        bus.watch_other_processes();
        Ok(bus)
    }

    /// Wakes every waiting consumer when another process commits to the file (SQLite's
    /// `data_version` moves only then); stops with the bus. Without a Tokio runtime, waiters
    /// see other processes' messages when their own wait ends.
    fn watch_other_processes(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let writer = Arc::downgrade(&self.writer);
        let wakers = Arc::downgrade(&self.wakers);
        runtime.spawn(async move {
            let mut seen = None;
            loop {
                tokio::time::sleep(OTHER_PROCESSES).await;
                let Some(writer) = writer.upgrade() else {
                    return;
                };
                let Ok(version) = writer.call(false, schema::data_version).await else {
                    continue;
                };
                if seen.is_some_and(|v| v != version)
                    && let Some(w) = wakers.upgrade()
                {
                    w.wake_all();
                }
                seen = Some(version);
            }
        });
    }

    /// A page of the values of tracking key `key`.
    async fn tracks(
        &self,
        key: Key,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        let after = after.map(str::to_owned);
        self.writer
            .call(false, move |c| {
                pages::tracks(c, key, after.as_deref(), limit)
            })
            .await
    }

    /// How a store treats its id (see [`Seen`]).
    fn seen(&self, dedupe: bool) -> Seen {
        Seen {
            dedupe,
            window_ms: millis(self.config.dedupe_window),
        }
    }

    /// Runs a change that makes messages of `queues` visible, waking their consumers once
    /// committed.
    async fn write<T, F>(&self, durable: bool, queues: &[String], f: F) -> BusResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> BusResult<T> + Send + 'static,
    {
        let out = self.writer.call(durable, f).await;
        if out.is_ok() {
            for q in queues {
                self.wakers.wake(q);
            }
        }
        out
    }
}

#[async_trait]
impl Backend for SqliteBus {
    fn config(&self) -> &BusConfig {
        &self.config
    }

    async fn bind(&self, binding: Binding) -> BusResult<()> {
        self.writer
            .call(true, move |c| schema::bind(c, &binding))
            .await?;
        self.binding_cache.invalidate();
        Ok(())
    }

    async fn bindings(&self) -> BusResult<Vec<Binding>> {
        self.binding_cache
            .get(|| self.writer.call(false, schema::bindings))
            .await
    }

    async fn probe_write(&self) -> BusResult<()> {
        self.writer.call(false, schema::probe_write).await
    }

    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        let (env, owned) = (env.clone(), queues.to_vec());
        let seen = self.seen(dedupe);
        self.write(true, queues, move |c| {
            schema::store(c, &env, &owned, &seen, now_ms())
        })
        .await
    }

    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>> {
        let queue = queue.to_owned();
        let ack_wait = millis(self.config.ack_wait_for(&queue));
        let weights = self.config.weights;
        let schedulers = self.schedulers.clone();
        self.writer
            .call(false, move |c| {
                let now = now_ms();
                let mut all = schedulers.lock().unwrap_or_else(|p| p.into_inner());
                let scheduler = all
                    .entry(queue.clone())
                    .or_insert_with(|| FairScheduler::new(weights));
                schema::fetch(c, &queue, max, scheduler, now, now + ack_wait)
            })
            .await
    }

    async fn ack(&self, d: &Delivery) -> BusResult<()> {
        let d = d.clone();
        self.writer
            .call(false, move |c| schema::settle(c, &d))
            .await
    }

    async fn ack_each(&self, deliveries: &[Delivery]) -> Vec<BusResult<()>> {
        let all = deliveries.to_vec();
        let settled = self
            .writer
            .call(false, move |c| {
                // The settled ones stay settled when another is stale: the job itself succeeds.
                Ok(all.iter().map(|d| schema::settle(c, d)).collect::<Vec<_>>())
            })
            .await;
        match settled {
            Ok(results) => results,
            Err(e) => deliveries.iter().map(|_| Err(e.clone())).collect(),
        }
    }

    async fn nack(&self, d: &Delivery, delay: Duration) -> BusResult<()> {
        let queue = [d.queue.to_string()];
        let d = d.clone();
        self.write(false, &queue, move |c| {
            schema::postpone(c, &d, now_ms() + millis(delay))
        })
        .await
    }

    async fn in_progress(&self, d: &Delivery) -> BusResult<()> {
        let d = d.clone();
        let ack_wait = millis(self.config.ack_wait_for(&d.queue));
        self.writer
            .call(false, move |c| schema::postpone(c, &d, now_ms() + ack_wait))
            .await
    }

    async fn dead_letter(&self, d: &Delivery, reason: DeadReason) -> BusResult<()> {
        let d = d.clone();
        self.writer
            .call(true, move |c| {
                schema::settle(c, &d)?;
                let env = &d.envelope;
                schema::insert_dead(
                    c,
                    Some(&env.id),
                    Some(&d.queue),
                    &reason,
                    &env.bytes,
                    Some(env),
                    now_ms(),
                )?;
                Ok(())
            })
            .await
    }

    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String> {
        let bytes = bytes.to_vec();
        let message_id = message_id.map(str::to_owned);
        self.writer
            .call(true, move |c| {
                schema::insert_dead(
                    c,
                    message_id.as_deref(),
                    None,
                    &reason,
                    &bytes,
                    None,
                    now_ms(),
                )
            })
            .await
    }

    async fn dead_letters_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        let after = after.map(str::to_owned);
        self.writer
            .call(false, move |c| {
                pages::dead_letters(c, after.as_deref(), limit)
            })
            .await
    }

    async fn find_dead_letter(&self, id: &str) -> BusResult<Option<DeadLetter>> {
        let id = id.to_owned();
        self.writer
            .call(false, move |c| pages::find_dead(c, &id))
            .await
    }

    async fn dead_letters_of(&self, message_id: &str) -> BusResult<Vec<DeadLetter>> {
        let message_id = message_id.to_owned();
        self.writer
            .call(false, move |c| pages::dead_of(c, &message_id))
            .await
    }

    async fn dead_letter_count(&self) -> BusResult<u64> {
        self.writer.call(false, schema::dead_count).await
    }

    async fn remove_dead_letter(&self, id: &str) -> BusResult<()> {
        let id = id.to_owned();
        self.writer
            .call(true, move |c| schema::remove_dead(c, &id))
            .await
    }

    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool> {
        let (h, m) = (handler.to_owned(), message_id.to_owned());
        self.writer
            .call(false, move |c| schema::is_handled(c, &h, &m))
            .await
    }

    async fn commit_once(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool> {
        let (h, m, r) = (handler.to_owned(), message_id.to_owned(), record.to_vec());
        let outgoing = outgoing.to_vec();
        let queues: Vec<String> = outgoing.iter().flat_map(|(_, q)| q.clone()).collect();
        let seen = self.seen(true);
        // One transaction: an outgoing message refused as a conflict undoes the whole commit.
        self.write(true, &queues, move |c| {
            if !schema::record_handled(c, &h, &m, &r)? {
                return Ok(false);
            }
            let now = now_ms();
            for (env, queues) in &outgoing {
                schema::store(c, env, queues, &seen, now)?;
            }
            Ok(true)
        })
        .await
    }

    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>> {
        let h = handler.to_owned();
        self.writer
            .call(false, move |c| schema::effects(c, &h))
            .await
    }

    async fn effect_count(&self, handler: &str) -> BusResult<u64> {
        let h = handler.to_owned();
        self.writer
            .call(false, move |c| schema::effect_count(c, &h))
            .await
    }

    async fn task_messages(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>> {
        let (task, after) = (task_id.to_owned(), after.map(str::to_owned));
        self.writer
            .call(false, move |c| {
                pages::task_messages(c, &task, after.as_deref(), limit)
            })
            .await
    }

    async fn locate(&self, id: &str) -> BusResult<Option<Logged>> {
        let id = id.to_owned();
        self.writer
            .call(false, move |c| pages::locate(c, &id))
            .await
    }

    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>> {
        let v = correlation_id.to_owned();
        self.writer
            .call(false, move |c| schema::by_key(c, Key::Correlation, &v))
            .await
    }

    async fn conversation(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>> {
        let v = conversation_id.to_owned();
        self.writer
            .call(false, move |c| schema::conversation(c, &v, after, limit))
            .await
    }

    async fn tasks_page(&self, after: Option<&str>, limit: usize) -> BusResult<Page<TrackSummary>> {
        self.tracks(Key::Task, after, limit).await
    }

    async fn conversations_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        self.tracks(Key::Conversation, after, limit).await
    }

    async fn prune(&self, before: PruneBefore) -> BusResult<Pruned> {
        let now = now_ms();
        let mut pruned = Pruned::default();
        if let Some(cut) = before.messages_cut(&self.config, now) {
            pruned.messages = retention::in_batches(&self.writer, move |c, from| {
                retention::prune_messages(c, cut, from)
            })
            .await?;
        }
        if let Some(cut) = before.dead_letters_cut(now) {
            pruned.dead_letters =
                retention::in_batches(&self.writer, move |c, _| retention::prune_dead(c, cut))
                    .await?;
        }
        if let Some(cut) = before.effects_cut(now) {
            pruned.effects = retention::in_batches(&self.writer, move |c, from| {
                retention::prune_effects(c, cut, from)
            })
            .await?;
        }
        Ok(pruned)
    }

    async fn oldest_waiting_ms(&self) -> BusResult<Option<i64>> {
        self.writer.call(false, retention::oldest_waiting).await
    }

    async fn depth(&self, queue: &str) -> BusResult<u64> {
        let queue = queue.to_owned();
        self.writer
            .call(false, move |c| schema::depth(c, &queue))
            .await
    }

    async fn peek(&self, queue: &str, limit: usize) -> BusResult<Vec<crate::peek::Queued>> {
        let queue = queue.to_owned();
        self.writer
            .call(false, move |c| peek::queued(c, &queue, limit, now_ms()))
            .await
    }

    /// Waits for a message stored or given back on `queue` by this process, a commit of another
    /// process, or the time the next delayed or leased delivery of `queue` becomes visible.
    async fn wait_for(&self, queue: &str, timeout: Duration) {
        let q = queue.to_owned();
        let look = async {
            let next = self
                .writer
                .call(false, move |c| schema::next_visible(c, &q))
                .await
                .ok()
                .flatten()?;
            Some(crate::wakers::until_visible(
                next,
                self.config.poll_interval,
            ))
        };
        self.wakers.wait(queue, timeout, look).await;
    }
}
