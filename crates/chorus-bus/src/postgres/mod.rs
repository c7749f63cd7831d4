//! The PostgreSQL store (feature `postgres`): a namespace is a schema; queues are rows claimed
//! with `FOR UPDATE SKIP LOCKED` under leases kept as visible-after times; a message, its
//! dedupe record and its deliveries are stored in one statement; consumers are woken by
//! `LISTEN`/`NOTIFY`; effect records, their outgoing messages and the ack of the delivery that
//! caused them commit in one transaction.

mod errors;
mod floor;
mod listen;
mod migrations;
mod options;
mod pages;
mod queue;
mod retention;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Object, Pool};

use crate::backend::Backend;
use crate::binding_cache::BindingCache;
use crate::config::{BusConfig, millis, now_ms};
use crate::delivery::{
    DeadLetter, DeadReason, Delivery, EffectRecord, LogEntry, Logged, TrackSummary,
};
use crate::envelope::Envelope;
use crate::error::{BusError, BusResult};
use crate::fair::FairScheduler;
use crate::retention::{Page, PruneBefore, Pruned};
use crate::routing::Binding;
use crate::wakers::{Listener, Wakers};
use errors::{pg_error, pool_error};
pub use floor::floor;
pub use migrations::LATEST as SCHEMA_VERSION;
pub use options::DEFAULT_MAX_CONNECTIONS;
use options::{Options, quoted};
use queue::Store;

/// A bus stored in a PostgreSQL database, under one schema (the namespace); any number of
/// processes may share it.
pub struct PostgresBus {
    config: BusConfig,
    pool: Pool,
    options: Options,
    schema: String,
    schedulers: Mutex<HashMap<String, Arc<Mutex<FairScheduler>>>>,
    binding_cache: BindingCache,
    wakers: Arc<Wakers>,
    announcer: listen::Announcer,
    _listener: Listener,
    /// The server runs no autovacuum: [`Backend::prune`] vacuums the namespace's tables.
    vacuums: bool,
}

/// The longest name PostgreSQL keeps for a schema or a notification channel.
const MAX_NAME: usize = 63;

impl PostgresBus {
    /// Connects to the database at `url` (`postgres://…`; what it leaves out from the `PG*`
    /// variables), brings schema `ns` to this build's version, and listens for wake-ups.
    pub async fn connect(url: &str, ns: &str, config: BusConfig) -> BusResult<PostgresBus> {
        let options = Options::from_env(url)?;
        if ns.len() > MAX_NAME {
            return Err(BusError::Config {
                what: "store".into(),
                detail: format!(
                    "the namespace {ns:?} is longer than PostgreSQL's {MAX_NAME}-byte names"
                ),
            });
        }
        let pool = options.pool(ns)?;
        let unreachable = |e: BusError| match e {
            BusError::Backend { detail, .. } => BusError::Backend {
                backend: "postgres",
                detail: format!("{detail} at {}", options.describe()),
            },
            other => other,
        };
        let vacuums = {
            let mut client = pool.get().await.map_err(pool_error).map_err(unreachable)?;
            migrations::migrate(&mut client, ns).await?;
            !retention::autovacuum_runs(&client).await?
        };
        if vacuums {
            tracing::warn!(
                schema = ns,
                "PostgreSQL's autovacuum is off on this server: chorus vacuums its own tables after each prune, or they would keep the space of every deleted row"
            );
        }
        let wakers = Arc::new(Wakers::default());
        let listener = listen::listen(&options, ns, &wakers)
            .await
            .map_err(|e| unreachable(pg_error(e)))?;
        let announcer = listen::Announcer::spawn(pool.clone(), ns);
        Ok(PostgresBus {
            config,
            announcer,
            pool,
            options,
            schema: ns.to_owned(),
            schedulers: Mutex::default(),
            binding_cache: BindingCache::default(),
            wakers,
            _listener: listener,
            vacuums,
        })
    }

    /// Brings schema `ns` at `url` to this build's version and returns the version it had
    /// (`chorus serve --migrate-only`).
    pub async fn migrate_only(url: &str, ns: &str) -> BusResult<i32> {
        let options = Options::from_env(url)?;
        let pool = options.pool(ns)?;
        let mut client = pool.get().await.map_err(pool_error)?;
        migrations::migrate(&mut client, ns).await
    }

    /// Drops the namespace's schema with everything in it.
    pub async fn destroy(self) -> BusResult<()> {
        let c = self.client().await?;
        c.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            quoted(&self.schema)
        ))
        .await
        .map_err(pg_error)
    }

    /// Bytes the namespace's tables and indexes take in the database.
    pub async fn stored_bytes_at(url: &str, ns: &str) -> BusResult<u64> {
        let options = Options::from_env(url)?;
        let pool = options.pool(ns)?;
        let c = pool.get().await.map_err(pool_error)?;
        let row = c
            .query_one(
                "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::int8 FROM pg_class c \
                 JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relkind = 'r'",
                &[&ns],
            )
            .await
            .map_err(pg_error)?;
        Ok(row.get::<_, i64>(0).unsigned_abs())
    }

    /// A pooled connection.
    async fn client(&self) -> BusResult<Object> {
        self.pool.get().await.map_err(pool_error)
    }

    fn store_settings(&self, dedupe: bool) -> Store {
        Store {
            dedupe,
            window_ms: millis(self.config.dedupe_window),
        }
    }

    fn scheduler(&self, queue: &str) -> Arc<Mutex<FairScheduler>> {
        let mut all = self.schedulers.lock().unwrap_or_else(|p| p.into_inner());
        all.entry(queue.to_owned())
            .or_insert_with(|| Arc::new(Mutex::new(FairScheduler::new(self.config.weights))))
            .clone()
    }

    /// After a commit that made deliveries of `queues` visible: wakes this process's
    /// consumers of them at once, and has the other processes told.
    fn wake(&self, queues: &[String]) {
        for q in queues {
            self.wakers.wake(q);
        }
        self.announcer.announce(queues);
    }

    /// Records the effect, stores the outgoing messages and, when given, settles the delivery,
    /// in one transaction; `Ok((applied, settled))`.
    async fn commit(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
        delivery: Option<&Delivery>,
    ) -> BusResult<(bool, bool)> {
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(pg_error)?;
        let applied = queue::record_handled(&tx, handler, message_id, record).await?;
        if applied {
            let store = self.store_settings(true);
            let now = now_ms();
            for (env, queues) in outgoing {
                // A conflict returns before the commit: the whole transaction is undone.
                store.put(&tx, env, queues, now).await?;
            }
        }
        let settled = match delivery {
            None => true,
            Some(d) => match queue::settle(&tx, d).await {
                Ok(()) => true,
                Err(BusError::StaleDelivery { .. }) => false,
                Err(e) => return Err(e),
            },
        };
        tx.commit().await.map_err(pg_error)?;
        if applied {
            let queues: Vec<String> = outgoing.iter().flat_map(|(_, q)| q.clone()).collect();
            self.wake(&queues);
        }
        Ok((applied, settled))
    }
}

#[async_trait]
impl Backend for PostgresBus {
    fn config(&self) -> &BusConfig {
        &self.config
    }

    async fn bind(&self, binding: Binding) -> BusResult<()> {
        pages::bind(&self.client().await?, &binding).await?;
        self.binding_cache.invalidate();
        Ok(())
    }

    async fn bindings(&self) -> BusResult<Vec<Binding>> {
        self.binding_cache
            .get(|| async { pages::bindings(&self.client().await?).await })
            .await
    }

    async fn probe_write(&self) -> BusResult<()> {
        // A real write: a read-only standby or a full disk refuses it.
        let c = self.client().await?;
        c.execute(
            "UPDATE chorus_schema SET version = version WHERE version = $1",
            &[&SCHEMA_VERSION],
        )
        .await
        .map_err(pg_error)?;
        Ok(())
    }

    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        let c = self.client().await?;
        let stored = self
            .store_settings(dedupe)
            .put(&c, env, queues, now_ms())
            .await?;
        if stored {
            self.wake(queues);
        }
        Ok(stored)
    }

    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>> {
        let ack_wait = millis(self.config.ack_wait_for(queue));
        let scheduler = self.scheduler(queue);
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(pg_error)?;
        let now = now_ms();
        let out = queue::fetch(&tx, queue, max, &scheduler, now, now + ack_wait).await?;
        tx.commit().await.map_err(pg_error)?;
        Ok(out)
    }

    async fn ack(&self, d: &Delivery) -> BusResult<()> {
        queue::settle(&self.client().await?, d).await
    }

    async fn ack_each(&self, deliveries: &[Delivery]) -> Vec<BusResult<()>> {
        let settled = match self.client().await {
            Ok(c) => queue::settle_all(&c, deliveries).await,
            Err(e) => Err(e),
        };
        match settled {
            Ok(results) => results,
            Err(e) => deliveries.iter().map(|_| Err(e.clone())).collect(),
        }
    }

    async fn nack(&self, d: &Delivery, delay: Duration) -> BusResult<()> {
        let c = self.client().await?;
        queue::postpone(&c, d, now_ms() + millis(delay)).await?;
        self.wake(&[d.queue.to_string()]);
        Ok(())
    }

    async fn in_progress(&self, d: &Delivery) -> BusResult<()> {
        let ack_wait = millis(self.config.ack_wait_for(&d.queue));
        let c = self.client().await?;
        queue::postpone(&c, d, now_ms() + ack_wait).await
    }

    async fn dead_letter(&self, d: &Delivery, reason: DeadReason) -> BusResult<()> {
        queue::dead_letter(&self.client().await?, d, &reason, now_ms()).await
    }

    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String> {
        queue::record_rejected(&self.client().await?, bytes, message_id, &reason, now_ms()).await
    }

    async fn dead_letters_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        pages::dead_letters(&self.client().await?, after, limit).await
    }

    async fn find_dead_letter(&self, id: &str) -> BusResult<Option<DeadLetter>> {
        pages::find_dead(&self.client().await?, id).await
    }

    async fn dead_letters_of(&self, message_id: &str) -> BusResult<Vec<DeadLetter>> {
        pages::dead_of(&self.client().await?, message_id).await
    }

    async fn dead_letter_count(&self) -> BusResult<u64> {
        pages::dead_count(&self.client().await?).await
    }

    async fn remove_dead_letter(&self, id: &str) -> BusResult<()> {
        pages::remove_dead(&self.client().await?, id).await
    }

    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool> {
        queue::is_handled(&self.client().await?, handler, message_id).await
    }

    async fn commit_once(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool> {
        let (applied, _) = self
            .commit(handler, message_id, record, outgoing, None)
            .await?;
        Ok(applied)
    }

    async fn commit_once_and_ack(
        &self,
        delivery: &Delivery,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool> {
        let (applied, settled) = self
            .commit(handler, message_id, record, outgoing, Some(delivery))
            .await?;
        match settled {
            true => Ok(applied),
            false => Err(queue::stale(delivery)),
        }
    }

    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>> {
        queue::effects(&self.client().await?, handler).await
    }

    async fn effect_count(&self, handler: &str) -> BusResult<u64> {
        queue::effect_count(&self.client().await?, handler).await
    }

    async fn task_messages(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>> {
        pages::task_messages(&self.client().await?, task_id, after, limit).await
    }

    async fn locate(&self, id: &str) -> BusResult<Option<Logged>> {
        pages::locate(&self.client().await?, id).await
    }

    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>> {
        pages::by_correlation(&self.client().await?, correlation_id).await
    }

    async fn conversation(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>> {
        pages::conversation(&self.client().await?, conversation_id, after, limit).await
    }

    async fn tasks_page(&self, after: Option<&str>, limit: usize) -> BusResult<Page<TrackSummary>> {
        pages::tracks(&self.client().await?, pages::Key::Task, after, limit).await
    }

    async fn conversations_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        pages::tracks(
            &self.client().await?,
            pages::Key::Conversation,
            after,
            limit,
        )
        .await
    }

    async fn prune(&self, before: PruneBefore) -> BusResult<Pruned> {
        let now = now_ms();
        let mut pruned = Pruned::default();
        if let Some(cut) = before.messages_cut(&self.config, now) {
            pruned.messages = retention::prune_messages(&self.pool, cut).await?;
        }
        if let Some(cut) = before.dead_letters_cut(now) {
            pruned.dead_letters = retention::prune_dead(&self.pool, cut).await?;
        }
        if let Some(cut) = before.effects_cut(now) {
            pruned.effects = retention::prune_effects(&self.pool, cut).await?;
        }
        if self.vacuums {
            retention::vacuum(&self.pool, &self.schema).await;
        }
        Ok(pruned)
    }

    async fn oldest_waiting_ms(&self) -> BusResult<Option<i64>> {
        pages::oldest_waiting(&self.client().await?).await
    }

    async fn depth(&self, queue: &str) -> BusResult<u64> {
        pages::depth(&self.client().await?, queue).await
    }

    async fn peek(&self, queue: &str, limit: usize) -> BusResult<Vec<crate::peek::Queued>> {
        pages::peek(&self.client().await?, queue, limit, now_ms()).await
    }

    /// Waits for a notification naming `queue` (a store, a nack or a lease given back by any
    /// process) or the time its next delayed or leased delivery becomes visible, asked once
    /// when the wait is armed.
    async fn wait_for(&self, queue: &str, timeout: Duration) {
        let look = async {
            let c = self.client().await.ok()?;
            let next = pages::next_visible(&c, queue).await.ok().flatten()?;
            Some(crate::wakers::until_visible(
                next,
                self.config.poll_interval,
            ))
        };
        self.wakers.wait(queue, timeout, look).await;
    }
}

impl PostgresBus {
    /// Where the store is (`user@host:port/database`, schema), for logs; never the password.
    pub fn describe(&self) -> String {
        format!("{} schema {}", self.options.describe(), self.schema)
    }
}
