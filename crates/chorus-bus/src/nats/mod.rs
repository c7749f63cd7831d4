//! NATS JetStream backend (feature `nats`); works with nats-server 2.9 and later.
//!
//! Layout for namespace `ns`: stream `ns_Q` (work queue, subjects `ns.q.<hex queue>.<rank>`,
//! one durable pull consumer per queue and priority), stream `ns_LOG` (every stored message under
//! `ns.log.<task>.<correlation>.<conversation>`, and under `ns.log.base.<conversation>` where a
//! pruned conversation's numbering goes on), stream `ns_DLQ` (dead letters: a
//! delivery's under `ns.dlq.<hex message id>`, bytes refused on publish under `ns.dlq`), stream
//! `ns_BIND` (bindings, one subject each, and `ns.health`, the last write `/healthz` made) and stream `ns_DONE` (handled ids with their effects,
//! written with an expected subject sequence of 0 so that only the first commit wins).
//! Stream `ns_SEEN` keeps each stored id with its content digest for the dedupe window (see
//! [`seen`]); the copies of a message carry `Nats-Msg-Id`s, so that a store retried after being
//! cut short stores each copy once. Neither per-message TTL nor the key-value API is used, so
//! servers from 2.9 on work.

mod pages;
mod peek;
mod retention;
mod seen;
mod setup;
mod wire;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_nats::jetstream::consumer::{self, AckPolicy, DeliverPolicy, PullConsumer, pull};
use async_nats::jetstream::context::{Publish, PublishErrorKind};
use async_nats::jetstream::stream::{self, LastRawMessageErrorKind, RetentionPolicy, StorageType};
use async_nats::jetstream::{self, Context};
use async_trait::async_trait;
use futures::StreamExt;
use futures::future::try_join_all;
use std::sync::Arc;

use crate::backend::Backend;
use crate::binding_cache::BindingCache;
use crate::config::{BusConfig, now_ms};
use crate::content::ContentDigest;
use crate::delivery::{
    DeadLetter, DeadReason, Delivery, EffectRecord, LogEntry, Logged, TrackSummary,
};
use crate::envelope::{Envelope, Rank};
use crate::error::{BusError, BusResult};
use crate::fair::FairScheduler;
use crate::retention::{Page, PruneBefore, Pruned};
use crate::routing::{Binding, Filter};
use crate::stored::{Committed, DeadInfo};
use crate::wakers::{Listener, Timers, Wakers};
use seen::{Claim, RETRY_WINDOW, Seen};
use wire::{DEAD_HEADER, envelope_from, envelope_headers, hex, key_token, nats_error, unhex};

/// How long a fetch plans from the message counts the previous fetch learned (from the
/// delivered messages' metadata) before asking the server again; bounds how late a newly
/// published urgent message may be weighed against a known backlog.
const WAITING_CACHE: Duration = Duration::from_millis(50);

/// How long a queue fetch waits for the server's next message or end-of-batch status before it
/// ends with what it got. A no-wait pull request that competing requests overtake may never be
/// answered (nats-server before 2.11.11 and 2.12.2, issue 7457), and the client library has no
/// timer for a request without an expiry: the fetch, and a `receive` calling it, would wait
/// forever. (An expiry does not help on 2.9: requests with one were then left unanswered even
/// without competition, until the library gave up 5 s after the expiry.) A message the server
/// still hands to an abandoned request comes back after the acknowledgement deadline.
const FETCH_SILENCE: Duration = Duration::from_secs(1);

/// The longest a fetch, a flush or a confirmed acknowledgement may take before it fails.
const SERVER_LIMIT: Duration = Duration::from_secs(10);

/// Runs `work`, failing with an error naming `what` when it takes longer than `SERVER_LIMIT`.
async fn bounded<T>(what: &str, work: impl Future<Output = BusResult<T>>) -> BusResult<T> {
    tokio::time::timeout(SERVER_LIMIT, work)
        .await
        .map_err(|_| {
            nats_error(format!(
                "the server did not complete {what} within {} s",
                SERVER_LIMIT.as_secs()
            ))
        })?
}

/// Up to `max` messages from `consumer`, what it holds now. With `silence`, the fetch ends
/// with what it got when the server stays silent that long (see [`FETCH_SILENCE`]); without,
/// for a consumer no one else fetches from at the same time, silence is an error.
async fn fetch_now(
    consumer: &PullConsumer,
    max: usize,
    silence: Option<Duration>,
    what: &str,
) -> BusResult<Vec<jetstream::Message>> {
    bounded(what, async {
        let mut batch = consumer
            .fetch()
            .max_messages(max)
            .messages()
            .await
            .map_err(nats_error)?;
        let mut got = Vec::new();
        loop {
            let next = match silence {
                Some(silence) => match tokio::time::timeout(silence, batch.next()).await {
                    Ok(next) => next,
                    Err(_) => break,
                },
                None => batch.next().await,
            };
            match next {
                Some(m) => got.push(m.map_err(nats_error)?),
                None => break,
            }
        }
        Ok(got)
    })
    .await
}

/// Unix milliseconds of a server time.
pub(super) fn ms(t: time::OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// A dead letter from its stream sequence, headers and payload.
fn dead_from(
    seq: u64,
    headers: Option<&async_nats::HeaderMap>,
    payload: &[u8],
) -> BusResult<DeadLetter> {
    let json = headers
        .and_then(|h| h.get(DEAD_HEADER))
        .ok_or_else(|| BusError::Corrupt("a dead letter lacks its header".into()))?;
    let info: DeadInfo = serde_json::from_str(json.as_str())
        .map_err(|e| BusError::Corrupt(format!("a dead letter header does not parse: {e}")))?;
    let bytes = payload.to_vec();
    Ok(DeadLetter {
        id: seq.to_string(),
        message_id: info.message_id,
        queue: info.queue,
        reason: info.reason,
        envelope: info.envelope.map(|e| Envelope {
            bytes: bytes.clone().into(),
            ..e
        }),
        bytes,
        at_ms: info.at_ms,
    })
}

/// A bus on NATS JetStream.
pub struct NatsBus {
    config: BusConfig,
    ns: String,
    client: async_nats::Client,
    js: Context,
    queues: stream::Stream,
    log: stream::Stream,
    done: stream::Stream,
    seen: Seen,
    consumers: Mutex<HashMap<(String, u8), PullConsumer>>,
    waiting: Mutex<HashMap<String, (Instant, [usize; 4])>>,
    /// This process's consumers waiting on queues (by hex name), woken by the `ns.wake.<hex
    /// queue>` notifications of every process.
    wakers: Arc<Wakers>,
    _listener: Listener,
    /// The announcements this process owes for later (see [`Timers`]).
    timers: Timers,
    schedulers: Mutex<HashMap<String, FairScheduler>>,
    binding_cache: BindingCache,
}

/// The streams of a namespace, by the suffix of their names (`ns_Q`, …).
const STREAMS: [&str; 6] = ["Q", "LOG", "DLQ", "BIND", "DONE", "SEEN"];

impl NatsBus {
    /// Connects to `url` and creates (or reuses) the streams and buckets of namespace `ns`
    /// (letters, digits, `_` and `-`).
    pub async fn connect(url: &str, ns: &str, config: BusConfig) -> BusResult<NatsBus> {
        if ns.is_empty()
            || !ns
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(BusError::Config {
                what: "namespace".into(),
                detail: format!("{ns:?} must be non-empty letters, digits, '_' or '-'"),
            });
        }
        let options = setup::Options::parse(url)?;
        let wakers = Arc::new(Wakers::default());
        // Wake notifications sent while the connection was down were not heard: every waiter
        // looks again once it is back (async-nats resubscribes by itself).
        let reconnected = Arc::downgrade(&wakers);
        let client = options
            .connect_options()
            .await?
            .event_callback(move |event| {
                let wakers = reconnected.clone();
                async move {
                    if matches!(event, async_nats::Event::Connected)
                        && let Some(wakers) = wakers.upgrade()
                    {
                        wakers.wake_all();
                    }
                }
            })
            .connect(&options.servers[..])
            .await
            .map_err(|e| nats_error(format!("cannot connect to {url}: {e}")))?;
        let js = jetstream::new(client.clone());
        let replicas = options.replicas;
        let queues = setup::ensure_stream(
            &js,
            stream::Config {
                name: format!("{ns}_Q"),
                subjects: vec![format!("{ns}.q.>")],
                retention: RetentionPolicy::WorkQueue,
                storage: StorageType::File,
                duplicate_window: RETRY_WINDOW,
                ..Default::default()
            },
            replicas,
        )
        .await?;
        let mut ensured = Vec::new();
        for (suffix, subjects) in [
            ("LOG", &["log.>"][..]),
            ("DLQ", &["dlq", "dlq.>"][..]),
            ("BIND", &["bind.>", "health"][..]),
            ("DONE", &["done.>"][..]),
        ] {
            // A stream made by an older chorus (dead letters had one subject) gets the new ones.
            let config = stream::Config {
                name: format!("{ns}_{suffix}"),
                subjects: subjects.iter().map(|s| format!("{ns}.{s}")).collect(),
                storage: StorageType::File,
                duplicate_window: RETRY_WINDOW,
                ..Default::default()
            };
            ensured.push(setup::ensure_stream(&js, config, replicas).await?);
        }
        let [log, _, _, done] = <[_; 4]>::try_from(ensured).expect("four streams ensured");
        let seen = Seen::open(&js, ns, config.dedupe_window, replicas).await?;
        let listener = listen_for_wakes(&client, ns, &wakers).await?;
        Ok(NatsBus {
            config,
            ns: ns.to_owned(),
            client,
            js,
            queues,
            log,
            done,
            seen,
            consumers: Mutex::default(),
            waiting: Mutex::default(),
            wakers,
            _listener: listener,
            timers: Timers::default(),
            schedulers: Mutex::default(),
            binding_cache: BindingCache::default(),
        })
    }

    /// Deletes every stream and bucket of this namespace (for tests and teardown).
    pub async fn destroy(self) -> BusResult<()> {
        for name in STREAMS {
            self.js
                .delete_stream(format!("{}_{name}", self.ns))
                .await
                .map_err(nats_error)?;
        }
        Ok(())
    }

    /// Bytes the streams of namespace `ns` hold on the server at `url` (JetStream's count of
    /// each; a missing stream holds none). Reads only: unlike [`NatsBus::connect`], it creates
    /// and reconfigures nothing.
    pub async fn stored_bytes_at(url: &str, ns: &str) -> BusResult<u64> {
        let options = setup::Options::parse(url)?;
        let client = options
            .connect_options()
            .await?
            .max_reconnects(Some(0))
            .connect(&options.servers[..])
            .await
            .map_err(|e| nats_error(format!("cannot connect to {url}: {e}")))?;
        let js = async_nats::jetstream::new(client);
        let mut total = 0;
        for name in STREAMS {
            if let Ok(mut stream) = js.get_stream(format!("{ns}_{name}")).await {
                total += stream.info().await.map_err(nats_error)?.state.bytes;
            }
        }
        Ok(total)
    }

    /// Tells the consumers of every process waiting on `queue` that it may have messages (a
    /// core NATS message, not stored: a waiter that misses it finds the message on its next
    /// look, at the latest after its wait's timeout).
    async fn announce(&self, queue: &str) {
        announce(&self.client, &self.ns, queue).await;
    }

    /// [`NatsBus::announce`] after `delay`, in the background (a nack with a delay: the
    /// server makes the message visible again then, and nobody else would say so).
    fn announce_after(&self, queue: &str, delay: Duration) {
        let (client, ns, queue) = (self.client.clone(), self.ns.clone(), queue.to_owned());
        self.timers
            .after(delay, async move { announce(&client, &ns, &queue).await });
    }

    /// How long a consumer waiting on `queue` may sleep before it looks again, by the server's
    /// counts: not at all when messages were never delivered (or the server could not be
    /// asked), [`HELD_LOOK`] while some are held or delayed (the process holding them
    /// announces their return, but it may be gone), else until woken.
    async fn next_look(&self, queue: &str) -> Option<Duration> {
        let recheck = self.config.poll_interval.max(Duration::from_millis(20));
        match try_join_all((0..4u8).map(|rank| self.consumer_info(queue, rank))).await {
            Err(_) => Some(recheck),
            Ok(infos) if infos.iter().any(|i| i.num_pending > 0) => Some(recheck),
            Ok(infos) if infos.iter().any(|i| i.num_ack_pending > 0) => Some(HELD_LOOK),
            Ok(_) => None,
        }
    }

    /// The server's current state of the durable consumer of `queue` at `rank`.
    async fn consumer_info(&self, queue: &str, rank: u8) -> BusResult<consumer::Info> {
        let mut c = self.consumer(queue, rank).await?;
        c.info().await.map_err(nats_error).cloned()
    }

    /// One fetch of up to `max` deliveries of `queue` (see [`Backend::fetch`]).
    async fn fetch_once(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>> {
        let consumers = try_join_all((0..4u8).map(|rank| self.consumer(queue, rank))).await?;
        let mut counted_at = None;
        let waiting = match self.known_waiting(queue) {
            Some(waiting) => waiting,
            None => {
                counted_at = Some(Instant::now());
                let infos = try_join_all(consumers.iter().map(|c| async move {
                    let mut c = c.clone();
                    let info = c.info().await.map_err(nats_error)?;
                    Ok::<_, BusError>(
                        usize::try_from(info.num_pending)
                            .unwrap_or(usize::MAX)
                            .saturating_add(info.num_ack_pending),
                    )
                }))
                .await?;
                [infos[0], infos[1], infos[2], infos[3]]
            }
        };
        let plan = {
            let mut all = self.schedulers.lock().unwrap_or_else(|p| p.into_inner());
            let s = all
                .entry(queue.to_owned())
                .or_insert_with(|| FairScheduler::new(self.config.weights));
            s.plan(waiting, max)
        };
        let mut wanted = [0usize; 4];
        for p in &plan {
            wanted[p.rank() as usize] += 1;
        }
        let what = format!("a fetch from queue {queue}");
        let fetches = consumers.iter().zip(wanted).map(|(c, n)| {
            let what = &what;
            async move {
                if n == 0 {
                    return Ok(Vec::new());
                }
                fetch_now(c, n, Some(FETCH_SILENCE), what).await
            }
        });
        let mut levels: Vec<std::collections::VecDeque<jetstream::Message>> = try_join_all(fetches)
            .await?
            .into_iter()
            .map(Into::into)
            .collect();
        let mut left = waiting;
        for (rank, level) in levels.iter().enumerate() {
            if wanted[rank] > 0 {
                // What the server still holds for this level after the last message it sent.
                left[rank] = match level.back().map(jetstream::Message::info) {
                    Some(Ok(info)) => usize::try_from(info.pending).unwrap_or(usize::MAX),
                    _ => 0,
                };
            }
        }
        {
            // The age stays that of the last server count, so unfetched levels are re-counted
            // at least every WAITING_CACHE.
            let mut all = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            let at = match (counted_at, all.get(queue)) {
                (Some(at), _) => at,
                (None, Some((at, _))) => *at,
                (None, None) => Instant::now(),
            };
            all.insert(queue.to_owned(), (at, left));
        }
        if left.iter().any(|&n| n > 0) {
            // More is waiting: let another consumer of this process fetch it.
            self.wakers.wake(&hex(queue));
        }
        if !plan.is_empty() {
            // What this fetch leases is visible again once the ack wait runs out, unless settled.
            let lease = self.config.ack_wait_for(queue) + Duration::from_millis(50);
            let (client, ns, q) = (self.client.clone(), self.ns.clone(), queue.to_owned());
            self.timers.lease(queue, lease, move || {
                let (client, ns, q) = (client.clone(), ns.clone(), q.clone());
                async move { announce(&client, &ns, &q).await }
            });
        }
        let name: std::sync::Arc<str> = std::sync::Arc::from(queue);
        let mut out = Vec::with_capacity(plan.len());
        for p in plan {
            let Some(m) = levels[p.rank() as usize].pop_front() else {
                continue;
            };
            let reply = m.reply.as_ref().map(|r| r.to_string());
            let attempt = m.info().map_err(nats_error)?.delivered;
            out.push(Delivery {
                envelope: std::sync::Arc::new(envelope_from(m.headers.as_ref(), &m.payload)?),
                queue: name.clone(),
                attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
                token: reply
                    .ok_or_else(|| BusError::Corrupt("a delivery has no ack subject".into()))?,
            });
        }
        Ok(out)
    }

    /// Forgets the bound consumers of `queue`: the next use binds them again.
    fn forget_consumers(&self, queue: &str) {
        self.consumers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(q, _), _| q != queue);
    }

    async fn consumer(&self, queue: &str, rank: u8) -> BusResult<PullConsumer> {
        let key = (queue.to_owned(), rank);
        if let Some(c) = self
            .consumers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(c.clone());
        }
        let name = format!("q{}_{rank}", hex(queue));
        let config = pull::Config {
            durable_name: Some(name.clone()),
            filter_subject: format!("{}.q.{}.{rank}", self.ns, hex(queue)),
            ack_policy: AckPolicy::Explicit,
            ack_wait: self.config.ack_wait_for(queue),
            max_deliver: -1,
            max_ack_pending: 100_000,
            ..Default::default()
        };
        let mut consumer: PullConsumer = self
            .queues
            .get_or_create_consumer(&name, config.clone())
            .await
            .map_err(nats_error)?;
        if consumer.cached_info().config.ack_wait != config.ack_wait {
            // Made by a bus with another ack wait for this queue: this bus's setting wins.
            consumer = self
                .queues
                .create_consumer(config)
                .await
                .map_err(nats_error)?;
        }
        self.consumers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, consumer.clone());
        Ok(consumer)
    }

    /// The waiting counts by rank the last fetch of `queue` left (plus this process's publishes
    /// since), when recent and not all zero.
    fn known_waiting(&self, queue: &str) -> Option<[usize; 4]> {
        let all = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let (at, waiting) = all.get(queue)?;
        (at.elapsed() < WAITING_CACHE && waiting.iter().any(|&n| n > 0)).then_some(*waiting)
    }

    /// Every message of `stream` on `filter`, in stream order.
    async fn read(&self, stream: &str, filter: String) -> BusResult<Vec<jetstream::Message>> {
        self.read_with(stream, filter, false).await
    }

    /// Like [`NatsBus::read`]; `headers_only` leaves the payloads on the server.
    async fn read_with(
        &self,
        stream: &str,
        filter: String,
        headers_only: bool,
    ) -> BusResult<Vec<jetstream::Message>> {
        self.read_from(stream, filter, DeliverPolicy::All, usize::MAX, headers_only)
            .await
    }

    /// At most `max` messages of `stream` on `filter`, in stream order from `start`.
    async fn read_from(
        &self,
        stream: &str,
        filter: String,
        start: DeliverPolicy,
        max: usize,
        headers_only: bool,
    ) -> BusResult<Vec<jetstream::Message>> {
        let stream = self.js.get_stream(stream).await.map_err(nats_error)?;
        let consumer: PullConsumer = stream
            .create_consumer(pull::Config {
                filter_subject: filter,
                ack_policy: AckPolicy::None,
                deliver_policy: start,
                inactive_threshold: Duration::from_secs(30),
                headers_only,
                ..Default::default()
            })
            .await
            .map_err(nats_error)?;
        let what = format!("a read of stream {}", stream.cached_info().config.name);
        let mut out = Vec::new();
        while out.len() < max {
            // This reader is its consumer's only one: the server answers each fetch.
            let batch = fetch_now(&consumer, (max - out.len()).min(512), None, &what).await?;
            let rest = match batch.last().map(jetstream::Message::info) {
                Some(Ok(info)) => info.pending,
                _ => 0,
            };
            out.extend(batch);
            if rest == 0 {
                break;
            }
        }
        let _ = stream.delete_consumer(&consumer.cached_info().name).await;
        Ok(out)
    }

    /// Sends an acknowledgement to the delivery's ack subject; `confirm` waits for the server
    /// to have applied it (a double ack), otherwise it is only flushed to the server.
    async fn settle(&self, d: &Delivery, payload: String, confirm: bool) -> BusResult<()> {
        if confirm {
            let request = self.client.request(d.token.clone(), payload.into());
            return bounded("an acknowledgement", async {
                request.await.map(drop).map_err(nats_error)
            })
            .await;
        }
        bounded("a settlement", async {
            self.client
                .publish(d.token.clone(), payload.into())
                .await
                .map_err(nats_error)?;
            self.client.flush().await.map_err(nats_error)
        })
        .await
    }

    async fn publish_outgoing(&self, outgoing: &[(Envelope, Vec<String>)]) -> BusResult<()> {
        for (env, queues) in outgoing {
            self.store(env, queues, true).await?;
        }
        Ok(())
    }

    fn done_subject(&self, handler: &str, message_id: &str) -> String {
        format!("{}.done.{}.{}", self.ns, hex(handler), hex(message_id))
    }

    /// The subject of a dead letter: `ns.dlq.<hex message id>` for a delivery that became one
    /// (the index [`Backend::dead_letters_of`] reads), `ns.dlq` for bytes refused on publish.
    fn dead_subject(&self, info: &DeadInfo) -> String {
        match (&info.queue, info.message_id.as_deref()) {
            (Some(_), Some(id)) if !id.is_empty() => self.delivered_dead_subject(id),
            _ => format!("{}.dlq", self.ns),
        }
    }

    /// The subject of the dead letters deliveries of message `message_id` became.
    fn delivered_dead_subject(&self, message_id: &str) -> String {
        format!("{}.dlq.{}", self.ns, hex(message_id))
    }

    async fn add_dead(&self, info: DeadInfo, bytes: &[u8]) -> BusResult<String> {
        let json = serde_json::to_string(&info).map_err(nats_error)?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(DEAD_HEADER, json.as_str());
        let ack = self
            .js
            .publish_with_headers(self.dead_subject(&info), headers, bytes.to_vec().into())
            .await
            .map_err(nats_error)?
            .await
            .map_err(nats_error)?;
        Ok(ack.sequence.to_string())
    }

    async fn log_envelopes(&self, filter: String) -> BusResult<Vec<Envelope>> {
        let stream = format!("{}_LOG", self.ns);
        self.read(&stream, filter)
            .await?
            .iter()
            .map(|m| envelope_from(m.headers.as_ref(), &m.payload))
            .collect()
    }

    /// A page of the values of the log subject token at `position` (0 task, 2 conversation),
    /// latest activity first, from the log's subjects and publish times.
    async fn tracks(
        &self,
        position: usize,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        let prefix = format!("{}.log.", self.ns);
        let log = self
            .read_with(&format!("{}_LOG", self.ns), format!("{prefix}*.*.*"), true)
            .await?;
        // Per key: the summary and the stream sequence of its last message (ties of time).
        let mut tracks: HashMap<&str, (TrackSummary, u64)> = HashMap::new();
        for m in &log {
            let token = m
                .subject
                .strip_prefix(&prefix)
                .and_then(|keys| keys.split('.').nth(position))
                .ok_or_else(|| {
                    BusError::Corrupt(format!("log subject {} does not parse", m.subject))
                })?;
            if token == "_" {
                continue;
            }
            let info = m.info().map_err(nats_error)?;
            let at = ms(info.published);
            let (summary, seq) = tracks.entry(token).or_insert_with(|| {
                let summary = TrackSummary {
                    id: String::new(),
                    messages: 0,
                    first_ms: at,
                    last_ms: at,
                };
                (summary, 0)
            });
            summary.messages += 1;
            summary.first_ms = summary.first_ms.min(at);
            summary.last_ms = summary.last_ms.max(at);
            *seq = info.stream_sequence;
        }
        let mut all = Vec::with_capacity(tracks.len());
        for (token, (mut summary, seq)) in tracks {
            summary.id = unhex(token)
                .ok_or_else(|| BusError::Corrupt(format!("log key {token} is not hex")))?;
            all.push((summary, seq));
        }
        crate::retention::track_page(all.into_iter().map(|(s, _)| s).collect(), after, limit)
    }

    /// Every binding, read from the bindings stream.
    async fn read_bindings(&self) -> BusResult<Vec<Binding>> {
        let prefix = format!("{}.bind.", self.ns);
        let mut list = Vec::new();
        for m in self
            .read(&format!("{}_BIND", self.ns), format!("{prefix}>"))
            .await?
        {
            let key = m.subject.strip_prefix(&prefix).unwrap_or_default();
            let mut parts = key.splitn(3, '.');
            let parsed = (
                parts.next().and_then(unhex),
                parts.next(),
                parts.next().and_then(unhex),
            );
            let (Some(queue), Some(kind), Some(value)) = parsed else {
                return Err(BusError::Corrupt(format!(
                    "binding subject {} does not parse",
                    m.subject
                )));
            };
            let filter = Filter::from_parts(kind, &value)
                .ok_or_else(|| BusError::Corrupt(format!("unknown binding kind {kind:?}")))?;
            let binding = Binding { queue, filter };
            if !list.contains(&binding) {
                list.push(binding);
            }
        }
        Ok(list)
    }
}

#[async_trait]
impl Backend for NatsBus {
    fn config(&self) -> &BusConfig {
        &self.config
    }

    async fn bind(&self, binding: Binding) -> BusResult<()> {
        let (kind, value) = binding.filter.parts();
        let subject = format!(
            "{}.bind.{}.{kind}.{}",
            self.ns,
            hex(&binding.queue),
            hex(value)
        );
        let publish = Publish::build()
            .payload(Vec::new().into())
            .message_id(subject.clone());
        self.js
            .send_publish(subject, publish)
            .await
            .map_err(nats_error)?
            .await
            .map_err(nats_error)?;
        self.binding_cache.invalidate();
        Ok(())
    }

    async fn bindings(&self) -> BusResult<Vec<Binding>> {
        self.binding_cache.get(|| self.read_bindings()).await
    }

    async fn probe_write(&self) -> BusResult<()> {
        // A write JetStream acknowledges only once stored (refused when its storage is full,
        // it has no leader, or the account is over its limits), then the older probes purged:
        // the subject keeps one message however often `/healthz` is asked.
        let subject = format!("{}.health", self.ns);
        self.js
            .publish(subject.clone(), crate::config::now_ms().to_string().into())
            .await
            .map_err(nats_error)?
            .await
            .map_err(nats_error)?;
        let stream = self
            .js
            .get_stream(format!("{}_BIND", self.ns))
            .await
            .map_err(nats_error)?;
        stream
            .purge()
            .filter(subject)
            .keep(1)
            .await
            .map_err(nats_error)?;
        Ok(())
    }

    async fn store(&self, env: &Envelope, queues: &[String], dedupe: bool) -> BusResult<bool> {
        // The id is claimed first: a conflict stores nothing, a duplicate of a finished store
        // stores nothing either. The copies' message ids carry the claim's time (`tag`), so
        // that a store retried after being cut short stores each copy once.
        let digest = ContentDigest::of(&env.bytes);
        let mut tag = now_ms();
        if dedupe && self.seen.active() {
            match self.seen.claim(&env.id, digest, tag).await? {
                Claim::Stored => return Ok(false),
                Claim::Store { at_ms } => tag = at_ms,
            }
        }
        crate::crash::reached(crate::crash::points::NATS_CLAIMED);
        let headers = envelope_headers(env)?;
        let mut acks = Vec::with_capacity(queues.len());
        for q in queues {
            let subject = format!("{}.q.{}.{}", self.ns, hex(q), env.priority.rank());
            let mut publish = Publish::build()
                .payload(env.bytes.clone())
                .headers(headers.clone());
            if dedupe {
                publish = publish.message_id(format!("{}:{}:{tag}", env.id, hex(q)));
            }
            acks.push(
                self.js
                    .send_publish(subject, publish)
                    .await
                    .map_err(nats_error)?,
            );
        }
        crate::crash::reached(crate::crash::points::NATS_COPIES_SENT);
        // The log entry is written even when every queue copy was a duplicate: a producer that
        // died before all were stored finds its message logged on the retry. All copies are
        // sent before any confirmation is awaited, so a publish costs one round trip.
        let subject = format!(
            "{}.log.{}.{}.{}",
            self.ns,
            key_token(env.task_id.as_deref()),
            key_token(env.correlation_id.as_deref()),
            key_token(env.conversation_id.as_deref())
        );
        let mut publish = Publish::build().payload(env.bytes.clone()).headers(headers);
        if dedupe {
            publish = publish.message_id(format!("{}:{tag}", env.id));
        }
        acks.push(
            self.js
                .send_publish(subject, publish)
                .await
                .map_err(nats_error)?,
        );
        let mut acks = try_join_all(acks.into_iter().map(std::future::IntoFuture::into_future))
            .await
            .map_err(nats_error)?;
        let logged = acks
            .pop()
            .ok_or_else(|| nats_error("no log confirmation"))?;
        {
            // This process's consumers learn of the new message without asking the server.
            let mut all = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            for q in queues {
                let (_, waiting) = all
                    .entry(q.clone())
                    .or_insert_with(|| (Instant::now(), [0; 4]));
                waiting[env.priority.rank() as usize] += 1;
            }
        }
        for q in queues {
            self.announce(q).await;
        }
        if self.seen.active() {
            self.seen
                .stored(&env.id, digest, tag, logged.sequence)
                .await;
        }
        Ok(!dedupe || !logged.duplicate || acks.iter().any(|a| !a.duplicate))
    }

    async fn fetch(&self, queue: &str, max: usize) -> BusResult<Vec<Delivery>> {
        match self.fetch_once(queue, max).await {
            // On a replicated stream a consumer just created (or moved to a new leader) can be
            // briefly unknown to the server asked; one deleted by hand is gone. Either way the
            // queue's consumers are bound again, once.
            Err(e) if e.to_string().contains("consumer not found") => {
                self.forget_consumers(queue);
                tokio::time::sleep(Duration::from_millis(100)).await;
                self.fetch_once(queue, max).await
            }
            other => other,
        }
    }

    async fn ack(&self, d: &Delivery) -> BusResult<()> {
        self.settle(d, "+ACK".into(), true).await
    }

    fn refuses_stale_settles(&self) -> bool {
        false
    }

    async fn ack_all(&self, deliveries: &[Delivery]) -> BusResult<()> {
        // Each acknowledgement confirmed by the server (sent together, answered together), as
        // a single one is: a 204 then means the server has the ack (on a replicated stream,
        // a quorum of its servers), so a server that dies after it does not deliver the
        // message again.
        bounded("a batch of acknowledgements", async {
            let requests = deliveries
                .iter()
                .map(|d| self.client.request(d.token.clone(), "+ACK".into()));
            try_join_all(requests).await.map(drop).map_err(nats_error)
        })
        .await
    }

    async fn nack(&self, d: &Delivery, delay: Duration) -> BusResult<()> {
        let payload = if delay.is_zero() {
            "-NAK".to_owned()
        } else {
            format!("-NAK {{\"delay\": {}}}", delay.as_nanos())
        };
        self.settle(d, payload, false).await?;
        if delay.is_zero() {
            self.announce(&d.queue).await;
        } else {
            self.announce_after(&d.queue, delay);
        }
        Ok(())
    }

    async fn in_progress(&self, d: &Delivery) -> BusResult<()> {
        self.settle(d, "+WPI".into(), false).await
    }

    async fn dead_letter(&self, d: &Delivery, reason: DeadReason) -> BusResult<()> {
        let info = DeadInfo::of_delivery(d, reason);
        self.add_dead(info, &d.envelope.bytes).await?;
        self.settle(d, "+TERM".into(), true).await
    }

    async fn record_rejected(
        &self,
        bytes: &[u8],
        message_id: Option<&str>,
        reason: DeadReason,
    ) -> BusResult<String> {
        let info = DeadInfo::rejected(message_id, reason);
        self.add_dead(info, bytes).await
    }

    async fn dead_letters_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        self.dead_page(after, limit).await
    }

    async fn find_dead_letter(&self, id: &str) -> BusResult<Option<DeadLetter>> {
        self.find_dead(id).await
    }

    async fn dead_letters_of(&self, message_id: &str) -> BusResult<Vec<DeadLetter>> {
        if message_id.is_empty() {
            return Ok(Vec::new());
        }
        let stream = format!("{}_DLQ", self.ns);
        let read = self
            .read(&stream, self.delivered_dead_subject(message_id))
            .await?;
        read.iter()
            .map(|m| {
                let seq = m.info().map_err(nats_error)?.stream_sequence;
                dead_from(seq, m.headers.as_ref(), &m.payload)
            })
            .collect()
    }

    async fn dead_letter_count(&self) -> BusResult<u64> {
        let stream = self
            .js
            .get_stream(format!("{}_DLQ", self.ns))
            .await
            .map_err(nats_error)?;
        Ok(stream.cached_info().state.messages)
    }

    async fn remove_dead_letter(&self, id: &str) -> BusResult<()> {
        let unknown = || BusError::UnknownDeadLetter(id.to_owned());
        let seq: u64 = id.parse().map_err(|_| unknown())?;
        let stream = self
            .js
            .get_stream(format!("{}_DLQ", self.ns))
            .await
            .map_err(nats_error)?;
        match stream.delete_message(seq).await {
            Ok(true) => Ok(()),
            _ => Err(unknown()),
        }
    }

    async fn already_handled(&self, handler: &str, message_id: &str) -> BusResult<bool> {
        let subject = self.done_subject(handler, message_id);
        let found = match self.done.get_last_raw_message_by_subject(&subject).await {
            Ok(m) => m,
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => return Ok(false),
            Err(e) => return Err(nats_error(e)),
        };
        // The effect is recorded; its outgoing messages may not all have been published before
        // a crash. Publishing them again is harmless: they are de-duplicated by id.
        let committed = Committed::decode(&found.payload)?;
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
        let publish = Publish::build()
            .payload(value.into())
            .expected_last_subject_sequence(0);
        let subject = self.done_subject(handler, message_id);
        let ack = self
            .js
            .send_publish(subject, publish)
            .await
            .map_err(nats_error)?
            .await;
        match ack {
            Ok(_) => {}
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => return Ok(false),
            Err(e) => return Err(nats_error(e)),
        }
        self.publish_outgoing(outgoing).await?;
        Ok(true)
    }

    async fn effects(&self, handler: &str) -> BusResult<Vec<EffectRecord>> {
        let prefix = format!("{}.done.{}.", self.ns, hex(handler));
        let mut out = Vec::new();
        for m in self
            .read(&format!("{}_DONE", self.ns), format!("{prefix}>"))
            .await?
        {
            let committed = Committed::decode(&m.payload)?;
            let message_id = m
                .subject
                .strip_prefix(&prefix)
                .and_then(unhex)
                .ok_or_else(|| {
                    BusError::Corrupt(format!("handled subject {} does not parse", m.subject))
                })?;
            out.push(EffectRecord {
                handler: handler.to_owned(),
                message_id,
                record: committed.record,
            });
        }
        Ok(out)
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
        let Some(seq) = self.seen.log_sequence(id).await? else {
            return Ok(None);
        };
        self.logged_at(seq).await
    }

    async fn by_correlation(&self, correlation_id: &str) -> BusResult<Vec<Envelope>> {
        self.log_envelopes(format!("{}.log.*.{}.*", self.ns, hex(correlation_id)))
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

    async fn tasks_page(&self, after: Option<&str>, limit: usize) -> BusResult<Page<TrackSummary>> {
        self.tracks(0, after, limit).await
    }

    async fn conversations_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        self.tracks(2, after, limit).await
    }

    async fn prune(&self, before: PruneBefore) -> BusResult<Pruned> {
        self.prune_now(before).await
    }

    async fn oldest_waiting_ms(&self) -> BusResult<Option<i64>> {
        let queues = self
            .js
            .get_stream(format!("{}_Q", self.ns))
            .await
            .map_err(nats_error)?;
        // A work-queue stream drops acknowledged messages: its first one still waits.
        let state = &queues.cached_info().state;
        Ok((state.messages > 0).then(|| ms(state.first_timestamp)))
    }

    async fn depth(&self, queue: &str) -> BusResult<u64> {
        // Nothing stored on the queue's subjects: empty, without creating its consumers.
        let mut stored = self
            .queues
            .info_with_subjects(format!("{}.q.{}.*", self.ns, hex(queue)))
            .await
            .map_err(nats_error)?;
        let mut any = false;
        while let Some(subject) = stored.next().await {
            any |= subject.map_err(nats_error)?.1 > 0;
        }
        if !any {
            return Ok(0);
        }
        let mut depth = 0u64;
        for rank in 0..4u8 {
            let info = self.consumer_info(queue, rank).await?;
            depth += info.num_pending + info.num_ack_pending as u64;
        }
        Ok(depth)
    }

    async fn peek(&self, queue: &str, limit: usize) -> BusResult<Vec<crate::peek::Queued>> {
        self.queued(queue, limit).await
    }

    async fn wait_for(&self, queue: &str, timeout: Duration) {
        // Woken by the notifications of every process (stored, given back, lease run out);
        // asks the server once, when the wait is armed, for messages that came before it.
        self.wakers
            .wait(&hex(queue), timeout, self.next_look(queue))
            .await;
    }
}

/// How often a waiting consumer looks again while its queue holds leased or delayed messages
/// (their return is announced by the process that holds them; this is for one that is gone).
const HELD_LOOK: Duration = Duration::from_secs(5);

/// The subject a queue's consumers are told on that it may have messages.
fn wake_subject(ns: &str, queue: &str) -> String {
    format!("{ns}.wake.{}", hex(queue))
}

/// Publishes the notification of [`NatsBus::announce`]; a failure only delays the waiters
/// until their next look.
async fn announce(client: &async_nats::Client, ns: &str, queue: &str) {
    let _ = client
        .publish(wake_subject(ns, queue), bytes::Bytes::new())
        .await;
}

/// Subscribes to the namespace's wake notifications and wakes the waiters of each queue named,
/// until the connection or the waiters are gone.
async fn listen_for_wakes(
    client: &async_nats::Client,
    ns: &str,
    wakers: &Arc<Wakers>,
) -> BusResult<Listener> {
    let prefix = format!("{ns}.wake.");
    let mut wakes = client
        .subscribe(format!("{prefix}>"))
        .await
        .map_err(nats_error)?;
    let wakers = Arc::downgrade(wakers);
    Ok(Listener(tokio::spawn(async move {
        while let Some(m) = wakes.next().await {
            let Some(wakers) = wakers.upgrade() else {
                return;
            };
            if let Some(queue) = m.subject.strip_prefix(&prefix) {
                wakers.wake(queue);
            }
        }
        // The client was closed: the bus is going away with it.
    })))
}
