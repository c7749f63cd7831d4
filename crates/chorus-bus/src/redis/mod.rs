//! Redis Streams backend with consumer groups (feature `redis`).
//!
//! Keys for namespace `ns`: stream `ns:q:<queue>:<rank>` per queue and priority (group
//! `workers`; acknowledged entries are deleted), lists `ns:task:*`, `ns:corr:*`, `ns:conv:*`
//! (the tracking logs), sorted sets `ns:recent:task` and `ns:recent:conv` with hashes
//! `ns:first:task` and `ns:first:conv` (their publish times), lists `ns:tasktime:*` and
//! `ns:convtime:*` (each entry's publish time), list `ns:log` (every logged message's time and
//! keys, in log order) and hash `ns:base` (entries pruned from the head of each log, so that
//! numbers go on), hash `ns:dead` (dead letters) with sorted set `ns:dead:ids` (their ids and
//! times) and sorted sets `ns:dead:msg:<message id>` (the letters a message's deliveries became), set `ns:bindings`, hash
//! `ns:done:<handler>` plus list `ns:effects:<handler>` (handled ids and their effects) with
//! sorted set `ns:effects_at` (each effect's time, for the pruner; effects written before it
//! existed are not in it and are kept), and
//! `ns:seen:<id>` keys (the content digest) expiring after the dedupe window; they live on the
//! server, so a reconnect keeps them, and a server restart too when Redis persists its data.
//! Publishing runs as one Lua script, so de-duplication, queues and logs change together. A nack delay longer than `ack_wait` is
//! shortened to `ack_wait` (Redis cannot hide a pending entry longer than its idle time).

mod failover;
mod pages;
mod peek;
mod persistence;
mod scripts;

pub use persistence::{Persistence, persistence, volatile_error};

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use redis::aio::ConnectionManagerConfig;

use failover::{Following, Topology};
use redis::streams::{
    StreamAutoClaimReply, StreamPendingCountReply, StreamPendingReply, StreamReadReply,
};
use redis::{AsyncCommands, Value};

use crate::backend::Backend;
use crate::binding_cache::BindingCache;
use crate::config::{BusConfig, millis, now_ms};
use crate::content::ContentDigest;
use crate::delivery::{
    DeadLetter, DeadReason, Delivery, EffectRecord, LogEntry, Logged, TrackSummary,
};
use crate::envelope::{Envelope, Rank};
use crate::error::seen_again;
use crate::error::{BusError, BusResult};
use crate::fair::FairScheduler;
use crate::retention::{Page, PruneBefore, Pruned};
use crate::routing::Binding;
use crate::stored::{Committed, DeadInfo, pack, unpack};
use crate::wakers::{Listener, Timers, Wakers};

const GROUP: &str = "workers";

/// How long one attempt to connect may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);

/// How the connection is made and made again: each attempt bounded, one retry half a second
/// later, so that while Redis is down a command fails within seconds (a publisher gets a 503
/// with `Retry-After`) and the next command tries again. A reply is waited for 10 s at most.
pub(crate) fn connection_settings() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(CONNECT_TIMEOUT)
        .set_response_timeout(Duration::from_secs(10))
        .set_number_of_retries(1)
        .set_factor(500)
        .set_max_delay(500)
}

fn redis_error(e: impl std::fmt::Display) -> BusError {
    BusError::Backend {
        backend: "redis",
        detail: e.to_string(),
    }
}

/// A bus on Redis Streams.
pub struct RedisBus {
    config: BusConfig,
    ns: String,
    /// Replaced by itself after a lost connection (a restart, `CLIENT KILL`, an idle `timeout`):
    /// the command that finds it lost fails, the next ones go to a new connection; moved to
    /// the new primary after a failover.
    conn: Following,
    consumer: String,
    groups: Mutex<HashSet<String>>,
    /// Where the next scan of each stream's pending entries for overdue ones starts.
    claim_cursors: Mutex<HashMap<String, String>>,
    schedulers: Mutex<HashMap<String, FairScheduler>>,
    binding_cache: BindingCache,
    /// This process's consumers waiting on queues, woken by the `ns:wake:<queue>` messages
    /// every process publishes (the publish script, a nack, a lease running out).
    wakers: Arc<Wakers>,
    _listener: Listener,
    /// The announcements this process owes for later (see [`Timers`]).
    timers: Timers,
}

impl RedisBus {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379`) and uses keys under `ns:`.
    pub async fn connect(url: &str, ns: &str, config: BusConfig) -> BusResult<RedisBus> {
        let conn = Following::connect(Topology::parse(url)?).await?;
        let wakers = Arc::new(Wakers::default());
        let listener = listen_for_wakes(conn.clone(), ns, &wakers).await?;
        Ok(RedisBus {
            config,
            ns: ns.to_owned(),
            conn,
            consumer: format!("c-{}", uuid::Uuid::new_v4().simple()),
            groups: Mutex::default(),
            claim_cursors: Mutex::default(),
            schedulers: Mutex::default(),
            binding_cache: BindingCache::default(),
            wakers,
            _listener: listener,
            timers: Timers::default(),
        })
    }

    /// Tells the consumers of every process waiting on `queue` that it may have messages (a
    /// Redis pub/sub message, not stored: a waiter that misses it finds the message on its next
    /// look, at the latest after its wait's timeout).
    async fn announce(&self, queue: &str) {
        announce(self.con(), &self.ns, queue).await;
    }

    /// [`RedisBus::announce`] after `delay`, in the background (a nack with a delay: the
    /// entry becomes claimable again then, and nobody else would say so).
    fn announce_after(&self, queue: &str, delay: Duration) {
        let (con, ns, queue) = (self.con(), self.ns.clone(), queue.to_owned());
        self.timers
            .after(delay, async move { announce(con, &ns, &queue).await });
    }

    /// How long a consumer waiting on `queue` may sleep before it looks again: not at all when
    /// a stream has entries nobody was given yet, or one whose lease ran out (or Redis could
    /// not be asked); until the oldest lease runs out; else until woken. Acknowledged entries
    /// are deleted, so the entries nobody was given are the length less the pending ones.
    async fn next_look(&self, queue: &str) -> Option<Duration> {
        let recheck = self.config.poll_interval.max(Duration::from_millis(20));
        let mut pipe = redis::pipe();
        for rank in 0..4 {
            let key = self.stream(queue, rank);
            pipe.xlen(&key)
                .xpending(&key, GROUP)
                .xpending_count(&key, GROUP, "-", "+", LOOK_AT);
        }
        let answers: Vec<Value> = match pipe.query_async(&mut self.con()).await {
            Ok(answers) => answers,
            Err(_) => return Some(recheck),
        };
        let mut oldest: Option<Duration> = None;
        for rank in answers.chunks(3) {
            let len: usize = redis::from_redis_value(&rank[0]).unwrap_or(1);
            let pending: StreamPendingReply = redis::from_redis_value(&rank[1]).unwrap_or_default();
            if len > pending.count() {
                return Some(recheck);
            }
            let held: StreamPendingCountReply =
                redis::from_redis_value(&rank[2]).unwrap_or_default();
            for entry in held.ids {
                let idle = Duration::from_millis(
                    u64::try_from(entry.last_delivered_ms).unwrap_or(u64::MAX),
                );
                oldest = oldest.max(Some(idle));
            }
        }
        let lease = self.config.ack_wait_for(queue);
        oldest.map(|idle| lease.saturating_sub(idle).max(recheck))
    }

    /// Deletes every key of this namespace (for tests and teardown), found with `SCAN` and
    /// removed with `UNLINK` a batch at a time: other clients of the server are not held up
    /// (`KEYS` would block them for time linear in the whole keyspace, `DEL` of a large key
    /// for time linear in its size).
    pub async fn destroy(self) -> BusResult<()> {
        let mut conn = self.con();
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{}:*", glob_escape(&self.ns)))
                .arg("COUNT")
                .arg(500)
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            if !batch.is_empty() {
                let _: () = redis::cmd("UNLINK")
                    .arg(&batch)
                    .query_async(&mut conn)
                    .await
                    .map_err(redis_error)?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Bytes the keys of namespace `ns` take in the memory of the server at `url` (`MEMORY
    /// USAGE` of each, pipelined, found by `SCAN`, so that a large namespace does not block the
    /// server).
    /// Reads only.
    pub async fn stored_bytes_at(url: &str, ns: &str) -> BusResult<u64> {
        let url = Topology::parse(url)?.primary().await?;
        let mut conn = redis::Client::open(url)
            .map_err(redis_error)?
            .get_multiplexed_async_connection()
            .await
            .map_err(redis_error)?;
        let (mut keys, mut cursor) = (Vec::new(), 0u64);
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(format!("{ns}:*"))
                .arg("COUNT")
                .arg(500)
                .query_async(&mut conn)
                .await
                .map_err(redis_error)?;
            keys.extend(batch);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        // Asked 500 keys a round trip (one each took seconds for a few thousand keys).
        let mut total = 0;
        for some in keys.chunks(500) {
            let mut pipe = redis::pipe();
            for key in some {
                pipe.cmd("MEMORY").arg("USAGE").arg(key);
            }
            let used: Vec<Option<u64>> = pipe.query_async(&mut conn).await.map_err(redis_error)?;
            total += used.into_iter().flatten().sum::<u64>();
        }
        Ok(total)
    }

    /// Every binding, read from the server.
    async fn read_bindings(&self) -> BusResult<Vec<Binding>> {
        let members: Vec<String> = self
            .con()
            .smembers(format!("{}:bindings", self.ns))
            .await
            .map_err(redis_error)?;
        let mut list: Vec<Binding> = members
            .iter()
            .map(|m| serde_json::from_str(m))
            .collect::<Result<_, _>>()
            .map_err(|e| BusError::Corrupt(format!("a binding does not parse: {e}")))?;
        list.sort_by(|a, b| (&a.queue, a.filter.parts()).cmp(&(&b.queue, b.filter.parts())));
        Ok(list)
    }

    fn stream(&self, queue: &str, rank: u8) -> String {
        format!("{}:q:{queue}:{rank}", self.ns)
    }

    fn con(&self) -> Following {
        self.conn.clone()
    }

    async fn ensure_group(&self, key: &str) -> BusResult<()> {
        if self
            .groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(key)
        {
            return Ok(());
        }
        let created: Result<(), redis::RedisError> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(key)
            .arg(GROUP)
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut self.con())
            .await;
        match created {
            Ok(()) => {}
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            Err(e) => return Err(redis_error(e)),
        }
        self.groups
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_owned());
        Ok(())
    }

    /// A failed command on `key`'s group; a group the server no longer has (a Redis that
    /// restarted without its data) is forgotten, so that the next fetch creates it again.
    fn group_error(&self, key: &str, e: redis::RedisError) -> BusError {
        if e.code() == Some("NOGROUP") {
            self.groups
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(key);
        }
        redis_error(e)
    }

    /// Claims up to `n` entries of one stream: overdue ones (held longer than `ack_wait`)
    /// first, then new ones.
    async fn claim(
        &self,
        key: &str,
        n: usize,
        ack_wait: Duration,
    ) -> BusResult<Vec<(String, u32, Vec<u8>)>> {
        let mut con = self.con();
        // Redis looks at COUNT x 10 pending entries a call: each call goes on where the last
        // one of this process stopped, so that an overdue entry behind many live leases is
        // reached too.
        let start = self
            .claim_cursors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
            .unwrap_or_else(|| "0-0".to_owned());
        let overdue: StreamAutoClaimReply = redis::cmd("XAUTOCLAIM")
            .arg(key)
            .arg(GROUP)
            .arg(&self.consumer)
            .arg(millis(ack_wait))
            .arg(&start)
            .arg("COUNT")
            .arg(n)
            .query_async(&mut con)
            .await
            .map_err(|e| self.group_error(key, e))?;
        self.claim_cursors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_owned(), overdue.next_stream_id.clone());
        let mut out = Vec::new();
        for entry in overdue.claimed {
            let pending: StreamPendingCountReply = redis::cmd("XPENDING")
                .arg(key)
                .arg(GROUP)
                .arg(&entry.id)
                .arg(&entry.id)
                .arg(1)
                .query_async(&mut con)
                .await
                .map_err(redis_error)?;
            let attempt = pending.ids.first().map_or(1, |p| p.times_delivered);
            out.push((
                entry.id.clone(),
                u32::try_from(attempt).unwrap_or(u32::MAX),
                field(&entry.map)?,
            ));
        }
        if out.len() < n {
            let fresh: Option<StreamReadReply> = redis::cmd("XREADGROUP")
                .arg("GROUP")
                .arg(GROUP)
                .arg(&self.consumer)
                .arg("COUNT")
                .arg(n - out.len())
                .arg("STREAMS")
                .arg(key)
                .arg(">")
                .query_async(&mut con)
                .await
                .map_err(|e| self.group_error(key, e))?;
            for entry in fresh.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
                out.push((entry.id.clone(), 1, field(&entry.map)?));
            }
        }
        Ok(out)
    }

    fn parts(&self, d: &Delivery) -> BusResult<(String, String)> {
        let (rank, id) = d
            .token
            .split_once('|')
            .ok_or_else(|| BusError::StaleDelivery {
                token: d.token.clone(),
                message_id: d.envelope.id.clone(),
            })?;
        Ok((format!("{}:q:{}:{rank}", self.ns, d.queue), id.to_owned()))
    }

    /// Sets the entry's idle time, so that it is redelivered `ack_wait - idle` from now.
    async fn set_idle(&self, d: &Delivery, idle: Duration) -> BusResult<()> {
        let (key, id) = self.parts(d)?;
        let mut con = self.conn.for_writes();
        let _: Value = redis::cmd("XCLAIM")
            .arg(&key)
            .arg(GROUP)
            .arg(&self.consumer)
            .arg(0)
            .arg(&id)
            .arg("IDLE")
            .arg(millis(idle))
            .arg("RETRYCOUNT")
            .arg(d.attempt)
            .arg("JUSTID")
            .query_async(&mut con)
            .await
            .map_err(redis_error)?;
        con.replicated().await
    }

    async fn add_dead(
        &self,
        info: &DeadInfo,
        bytes: &[u8],
        settle: Option<(String, String)>,
    ) -> BusResult<String> {
        let mut value = serde_json::to_vec(info).map_err(redis_error)?;
        value.push(b'\n');
        value.extend_from_slice(bytes);
        let (key, id) = settle.unwrap_or_default();
        let mut con = self.conn.for_writes();
        let dead_id: i64 = scripts::dead()
            .arg(&self.ns)
            .arg(value)
            .arg(key)
            .arg(id)
            .arg(now_ms())
            // Indexed by message id when a delivery became the letter (not on publish).
            .arg(match (&info.queue, &info.message_id) {
                (Some(_), Some(id)) => id.as_str(),
                _ => "",
            })
            .invoke_async(&mut con)
            .await
            .map_err(redis_error)?;
        con.replicated().await?;
        Ok(dead_id.to_string())
    }

    async fn list(&self, key: String, start: isize, stop: isize) -> BusResult<Vec<Envelope>> {
        let values: Vec<Vec<u8>> = self
            .con()
            .lrange(key, start, stop)
            .await
            .map_err(redis_error)?;
        values.iter().map(|v| unpack(v)).collect()
    }

    async fn publish_outgoing(&self, outgoing: &[(Envelope, Vec<String>)]) -> BusResult<()> {
        for (env, queues) in outgoing {
            self.store(env, queues, true).await?;
        }
        Ok(())
    }
}

fn field(map: &HashMap<String, Value>) -> BusResult<Vec<u8>> {
    match map.get("m") {
        Some(Value::BulkString(b)) => Ok(b.clone()),
        _ => Err(BusError::Corrupt(
            "a stream entry lacks its message field".into(),
        )),
    }
}

#[async_trait]
impl Backend for RedisBus {
    fn config(&self) -> &BusConfig {
        &self.config
    }

    async fn bind(&self, binding: Binding) -> BusResult<()> {
        let member = serde_json::to_string(&binding).map_err(redis_error)?;
        let _: i64 = self
            .con()
            .sadd(format!("{}:bindings", self.ns), member)
            .await
            .map_err(redis_error)?;
        self.binding_cache.invalidate();
        Ok(())
    }

    async fn bindings(&self) -> BusResult<Vec<Binding>> {
        self.binding_cache.get(|| self.read_bindings()).await
    }

    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        let digest = ContentDigest::of(&env.bytes);
        let mut invocation = scripts::store();
        invocation
            .arg(&self.ns)
            .arg(&env.id)
            .arg(if dedupe { "1" } else { "0" })
            .arg(millis(self.config.dedupe_window).max(1))
            .arg(env.priority.rank())
            .arg(pack(env)?)
            .arg(env.task_id.as_deref().unwrap_or(""))
            .arg(env.correlation_id.as_deref().unwrap_or(""))
            .arg(env.conversation_id.as_deref().unwrap_or(""))
            .arg(now_ms())
            .arg(digest.hex());
        for q in queues {
            invocation.arg(q);
        }
        let mut con = self.conn.for_writes();
        let answer: Value = invocation
            .invoke_async(&mut con)
            .await
            .map_err(redis_error)?;
        con.replicated().await?;
        match answer {
            Value::Int(n) => Ok(n == 1),
            Value::BulkString(stored) => {
                let stored = std::str::from_utf8(&stored)
                    .ok()
                    .and_then(ContentDigest::from_hex)
                    .ok_or_else(|| {
                        BusError::Corrupt(format!(
                            "the content digest kept for id {:?} does not parse",
                            env.id
                        ))
                    })?;
                seen_again(&env.id, stored, digest)
            }
            other => Err(redis_error(format!(
                "unexpected answer to a store: {other:?}"
            ))),
        }
    }

    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>> {
        let keys: Vec<String> = (0..4).map(|r| self.stream(queue, r)).collect();
        for key in &keys {
            self.ensure_group(key).await?;
        }
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.xlen(key);
        }
        let lens: Vec<usize> = pipe
            .query_async(&mut self.con())
            .await
            .map_err(redis_error)?;
        let waiting: [usize; 4] = [lens[0], lens[1], lens[2], lens[3]];
        let plan = {
            let mut all = self.schedulers.lock().unwrap_or_else(|p| p.into_inner());
            all.entry(queue.to_owned())
                .or_insert_with(|| FairScheduler::new(self.config.weights))
                .plan(waiting, max)
        };
        let mut wanted = [0usize; 4];
        for p in &plan {
            wanted[p.rank() as usize] += 1;
        }
        let mut levels: Vec<std::collections::VecDeque<(String, u32, Vec<u8>)>> = Vec::new();
        for (rank, key) in keys.iter().enumerate() {
            let got = if wanted[rank] > 0 {
                self.claim(key, wanted[rank], self.config.ack_wait_for(queue))
                    .await?
            } else {
                Vec::new()
            };
            levels.push(got.into());
        }
        if levels.iter().any(|l| !l.is_empty()) {
            // What this fetch leases is claimable again once the ack wait runs out, unless
            // settled.
            let lease = self.config.ack_wait_for(queue) + Duration::from_millis(50);
            let (con, ns, q) = (self.con(), self.ns.clone(), queue.to_owned());
            self.timers.lease(queue, lease, move || {
                let (con, ns, q) = (con.clone(), ns.clone(), q.clone());
                async move { announce(con, &ns, &q).await }
            });
        }
        let name: std::sync::Arc<str> = std::sync::Arc::from(queue);
        let mut out = Vec::with_capacity(plan.len());
        for p in plan {
            let Some((id, attempt, value)) = levels[p.rank() as usize].pop_front() else {
                continue;
            };
            out.push(Delivery {
                envelope: std::sync::Arc::new(unpack(&value)?),
                queue: name.clone(),
                attempt,
                token: format!("{}|{id}", p.rank()),
            });
        }
        Ok(out)
    }

    async fn ack(&self, d: &Delivery) -> BusResult<()> {
        let (key, id) = self.parts(d)?;
        let mut con = self.conn.for_writes();
        let (acked, _): (i64, i64) = redis::pipe()
            .atomic()
            .xack(&key, GROUP, &[&id])
            .xdel(&key, &[&id])
            .query_async(&mut con)
            .await
            .map_err(redis_error)?;
        if acked == 0 {
            return Err(BusError::StaleDelivery {
                token: d.token.clone(),
                message_id: d.envelope.id.clone(),
            });
        }
        con.replicated().await
    }

    async fn nack(&self, d: &Delivery, delay: Duration) -> BusResult<()> {
        let ack_wait = self.config.ack_wait_for(&d.queue);
        self.set_idle(d, ack_wait.saturating_sub(delay)).await?;
        match delay.min(ack_wait) {
            Duration::ZERO => self.announce(&d.queue).await,
            after => self.announce_after(&d.queue, after),
        }
        Ok(())
    }

    async fn in_progress(&self, d: &Delivery) -> BusResult<()> {
        self.set_idle(d, Duration::ZERO).await
    }

    async fn dead_letter(&self, d: &Delivery, reason: DeadReason) -> BusResult<()> {
        let info = DeadInfo::of_delivery(d, reason);
        self.add_dead(&info, &d.envelope.bytes, Some(self.parts(d)?))
            .await?;
        Ok(())
    }

    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String> {
        let info = DeadInfo::rejected(message_id, reason);
        self.add_dead(&info, bytes, None).await
    }

    async fn dead_letters_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        self.dead_page(after, limit).await
    }

    async fn find_dead_letter(&self, id: &str) -> BusResult<Option<DeadLetter>> {
        let value: Option<Vec<u8>> = self
            .con()
            .hget(format!("{}:dead", self.ns), id)
            .await
            .map_err(redis_error)?;
        value.map(|v| pages::dead_letter(id, &v)).transpose()
    }

    async fn dead_letters_of(&self, message_id: &str) -> BusResult<Vec<DeadLetter>> {
        // Every removal and prune takes its letter out of this index; an id left behind (a
        // letter whose details did not parse when it went) is skipped and dropped here.
        let key = format!("{}:dead:msg:{message_id}", self.ns);
        let ids: Vec<String> = self.con().zrange(&key, 0, -1).await.map_err(redis_error)?;
        let mut letters = Vec::with_capacity(ids.len());
        for id in ids {
            match self.find_dead_letter(&id).await? {
                Some(letter) => letters.push(letter),
                None => {
                    let _: i64 = self.con().zrem(&key, &id).await.map_err(redis_error)?;
                }
            }
        }
        Ok(letters)
    }

    async fn dead_letter_count(&self) -> BusResult<u64> {
        self.con()
            .hlen(format!("{}:dead", self.ns))
            .await
            .map_err(redis_error)
    }

    async fn remove_dead_letter(&self, id: &str) -> BusResult<()> {
        let removed: i64 = scripts::remove_dead()
            .arg(&self.ns)
            .arg(id)
            .invoke_async(&mut self.con())
            .await
            .map_err(redis_error)?;
        if removed == 0 {
            return Err(BusError::UnknownDeadLetter(id.to_owned()));
        }
        Ok(())
    }

    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool> {
        let value: Option<Vec<u8>> = self
            .con()
            .hget(format!("{}:done:{handler}", self.ns), message_id)
            .await
            .map_err(redis_error)?;
        let Some(value) = value else { return Ok(false) };
        // Outgoing messages of a commit cut short by a crash are published again, de-duplicated.
        let committed = Committed::decode(&value)?;
        self.publish_outgoing(&committed.outgoing).await?;
        Ok(true)
    }

    async fn commit_once(
        &self,
        handler: &str,
        message_id: &str,
        record: &[u8],
        outgoing: &[(Envelope, Vec<String>)],
    ) -> BusResult<bool> {
        let value = Committed::encode(record, outgoing)?;
        let mut con = self.conn.for_writes();
        let fresh: i64 = scripts::commit()
            .arg(&self.ns)
            .arg(handler)
            .arg(message_id)
            .arg(value)
            .arg(crate::config::now_ms())
            .invoke_async(&mut con)
            .await
            .map_err(redis_error)?;
        con.replicated().await?;
        if fresh == 0 {
            return Ok(false);
        }
        self.publish_outgoing(outgoing).await?;
        Ok(true)
    }

    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>> {
        let mut con = self.con();
        let ids: Vec<String> = con
            .lrange(format!("{}:effects:{handler}", self.ns), 0, -1)
            .await
            .map_err(redis_error)?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let value: Vec<u8> = con
                .hget(format!("{}:done:{handler}", self.ns), &id)
                .await
                .map_err(redis_error)?;
            let committed = Committed::decode(&value)?;
            out.push(EffectRecord {
                handler: handler.to_owned(),
                message_id: id,
                record: committed.record,
            });
        }
        Ok(out)
    }

    async fn effect_count(&self, handler: &str) -> BusResult<u64> {
        self.con()
            .llen(format!("{}:effects:{handler}", self.ns))
            .await
            .map_err(redis_error)
    }

    async fn tasks_page(&self, after: Option<&str>, limit: usize) -> BusResult<Page<TrackSummary>> {
        self.tracks("task", after, limit).await
    }

    async fn conversations_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        self.tracks("conv", after, limit).await
    }

    async fn prune(&self, before: PruneBefore) -> BusResult<Pruned> {
        self.prune_now(before).await
    }

    async fn oldest_waiting_ms(&self) -> BusResult<Option<i64>> {
        self.oldest_waiting().await
    }

    async fn probe_write(&self) -> BusResult<()> {
        // A write Redis refuses when it cannot persist (`MISCONF` after a failed save), is out
        // of memory under `noeviction`, or is a read-only replica.
        redis::cmd("SET")
            .arg(format!("{}:health", self.ns))
            .arg(crate::config::now_ms())
            .arg("PX")
            .arg(60_000)
            .query_async::<()>(&mut self.con())
            .await
            .map_err(redis_error)
    }

    async fn depth(&self, queue: &str) -> BusResult<u64> {
        // Acknowledged and dead-lettered entries are deleted: what is left is unacknowledged.
        let mut pipe = redis::pipe();
        for rank in 0..4 {
            pipe.xlen(self.stream(queue, rank));
        }
        let lens: Vec<u64> = pipe
            .query_async(&mut self.con())
            .await
            .map_err(redis_error)?;
        Ok(lens.iter().sum())
    }

    async fn wait_for(&self, queue: &str, timeout: Duration) {
        // Woken by the notifications of every process (stored, given back, lease run out);
        // asks Redis once, when the wait is armed, for entries that came before it.
        self.wakers
            .wait(queue, timeout, self.next_look(queue))
            .await;
    }

    async fn peek(&self, queue: &str, limit: usize) -> BusResult<Vec<crate::peek::Queued>> {
        self.queued(queue, limit).await
    }

    async fn task_messages(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>> {
        self.task_page(task_id, after, limit).await
    }

    async fn locate(&self, id: &str) -> BusResult<Option<Logged>> {
        self.located(id).await
    }

    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>> {
        self.list(format!("{}:corr:{correlation_id}", self.ns), 0, -1)
            .await
    }

    async fn conversation(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>> {
        self.conversation_entries(conversation_id, after, limit)
            .await
    }
}

/// Pending entries of each stream a waiting consumer looks at for the oldest lease.
const LOOK_AT: usize = 100;

/// The channel a queue's consumers are told on that it may have messages.
fn wake_channel(ns: &str, queue: &str) -> String {
    format!("{ns}:wake:{queue}")
}

/// Publishes the notification of [`RedisBus::announce`]; a failure only delays the waiters
/// until their next look.
async fn announce(mut con: Following, ns: &str, queue: &str) {
    let _: Result<i64, _> = con.publish(wake_channel(ns, queue), "").await;
}

/// `s` with Redis's glob characters escaped, for a `PSUBSCRIBE` pattern.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Subscribes (on a connection of its own) to the namespace's wake notifications and wakes the
/// waiters of each queue named, until the waiters are gone; after a lost connection it
/// subscribes again every second and wakes every waiter once it has (what was said meanwhile
/// was not heard).
async fn listen_for_wakes(
    primary: Following,
    ns: &str,
    wakers: &Arc<Wakers>,
) -> BusResult<Listener> {
    let prefix = wake_channel(ns, "");
    let pattern = format!("{}*", glob_escape(&prefix));
    // On the primary of the moment: after a failover, the next subscription goes to the new one.
    let subscribe = |primary: Following, pattern: String| async move {
        let client = redis::Client::open(primary.url()).map_err(redis_error)?;
        let mut pubsub = tokio::time::timeout(Duration::from_secs(3), client.get_async_pubsub())
            .await
            .map_err(|_| redis_error("subscribing timed out"))?
            .map_err(redis_error)?;
        pubsub.psubscribe(&pattern).await.map_err(redis_error)?;
        Ok::<_, BusError>(pubsub.into_on_message())
    };
    let mut messages = subscribe(primary.clone(), pattern.clone()).await?;
    let wakers = Arc::downgrade(wakers);
    Ok(Listener(tokio::spawn(async move {
        loop {
            while let Some(m) = messages.next().await {
                let Some(wakers) = wakers.upgrade() else {
                    return;
                };
                if let Some(queue) = m.get_channel_name().strip_prefix(&prefix) {
                    wakers.wake(queue);
                }
            }
            messages = loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if wakers.strong_count() == 0 {
                    return;
                }
                if let Ok(again) = subscribe(primary.clone(), pattern.clone()).await {
                    break again;
                }
            };
            if let Some(wakers) = wakers.upgrade() {
                wakers.wake_all();
            }
        }
    })))
}
