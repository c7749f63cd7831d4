//! The load generator behind `chorus bench bus`: producers publish, consumers receive and ack.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use crate::bus::Bus;
use crate::config::BusConfig;
use crate::envelope::Envelope;
use crate::error::{BusError, BusResult};
use crate::open::StoreAddress;

pub use crate::bench_report::{BenchReport, FloorLoad};

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The backend.
    pub backend: StoreAddress,
    /// Messages to publish in all.
    pub messages: usize,
    /// Publishing tasks.
    pub producers: usize,
    /// Consuming tasks.
    pub consumers: usize,
    /// Size of each message's JSON, bytes.
    pub size: usize,
    /// Stop publishing after this long, even before `messages`.
    pub duration: Option<Duration>,
    /// Publishes in flight per producer.
    pub window: usize,
    /// Operations per SQLite commit at most (1 = one fsync per operation).
    pub max_batch: usize,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            backend: StoreAddress::Memory,
            messages: 100_000,
            producers: 1,
            consumers: 4,
            size: 1024,
            duration: None,
            window: 256,
            max_batch: crate::sqlite::DEFAULT_MAX_BATCH,
        }
    }
}

impl BenchOptions {
    /// The load of these options for a floor: the same messages, size, consumers, publishes in
    /// flight (all producers together) and largest commit.
    pub fn floor_load(&self) -> FloorLoad {
        FloorLoad {
            messages: self.messages,
            size: self.size,
            consumers: self.consumers,
            in_flight: self.window.max(1) * self.producers.max(1),
            max_batch: self.max_batch,
        }
    }
}

/// What the floor of a run on `backend` is, in a few words; `None` for a store without one
/// (only SQLite and PostgreSQL have a floor of plain SQL).
pub fn floor_description(backend: &StoreAddress) -> Option<&'static str> {
    match backend {
        StoreAddress::Sqlite(_) => Some(
            "plain INSERT and DELETE, one thread committing all that waits, same rows and fsyncs, no chorus code",
        ),
        #[cfg(feature = "postgres")]
        StoreAddress::Postgres(_) => {
            Some("plain INSERT per commit, SKIP LOCKED DELETE, same rows, no chorus code")
        }
        _ => None,
    }
}

/// The floor the run of `opts` is compared with, measured now (see [`floor_description`]): in
/// a file beside a SQLite store's, on a PostgreSQL store's database; `None` for the others.
pub async fn floor(opts: &BenchOptions) -> BusResult<Option<BenchReport>> {
    match &opts.backend {
        StoreAddress::Sqlite(path) => crate::sqlite::floor(path, &opts.floor_load())
            .await
            .map(Some),
        #[cfg(feature = "postgres")]
        StoreAddress::Postgres(server) => crate::postgres::floor(&server.url, &opts.floor_load())
            .await
            .map(Some),
        _ => Ok(None),
    }
}

/// Live counters, for a progress display.
#[derive(Debug, Default)]
pub struct Progress {
    /// Messages published so far.
    pub sent: AtomicU64,
    /// Messages received so far.
    pub received: AtomicU64,
}

/// A handoff-shaped JSON document of exactly `size` bytes (at least its skeleton).
fn payload(size: usize) -> Vec<u8> {
    let head = br#"{"payload":{"handoff_type":"NOTIFICATION","data":{"message":""#;
    let tail = br#""}}}"#;
    let fill = size.saturating_sub(head.len() + tail.len());
    let mut out = Vec::with_capacity(size.max(head.len() + tail.len()));
    out.extend_from_slice(head);
    out.resize(head.len() + fill, b'x');
    out.extend_from_slice(tail);
    out
}

/// Runs the load and reports; `progress` is updated as it goes.
pub async fn run(opts: &BenchOptions, progress: Arc<Progress>) -> BusResult<BenchReport> {
    let config = BusConfig {
        validator: None,
        poll_interval: Duration::from_millis(20),
        ..BusConfig::default()
    };
    // A namespace of its own, so that a run leaves a served hub's streams and keys alone; it
    // holds nothing but this run's messages and is deleted afterwards.
    let backend = opts
        .backend
        .clone()
        .with_namespace(&format!("chorus_bench_{}", std::process::id()));
    let bus = backend.open_with_batch(config, opts.max_batch).await?;
    let report = load(bus, opts, progress).await;
    let deleted = backend.destroy_namespace().await;
    let report = report?;
    deleted.map_err(|e| {
        BusError::Storage(format!(
            "the run finished, but its namespace in {backend} could not be deleted: {e}"
        ))
    })?;
    Ok(report)
}

/// Publishes and consumes on `bus` as `opts` says, and measures.
async fn load(
    bus: Arc<dyn Bus>,
    opts: &BenchOptions,
    progress: Arc<Progress>,
) -> BusResult<BenchReport> {
    let queue = format!("bench-{}-{}", std::process::id(), crate::config::now_ms());
    let total = opts.messages.max(1);
    let seen: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    let start = Instant::now();
    // One body for every message: publishing hands the bus a reference, not a copy.
    let body = bytes::Bytes::from(payload(opts.size));
    let producers_done = Arc::new(AtomicU64::new(0));
    let mut producers = Vec::new();
    for p in 0..opts.producers.max(1) {
        let (bus, queue, body, progress, done) = (
            bus.clone(),
            queue.clone(),
            body.clone(),
            progress.clone(),
            producers_done.clone(),
        );
        let (window, duration, count) = (opts.window.max(1), opts.duration, opts.producers.max(1));
        producers.push(tokio::spawn(async move {
            let mut inflight = FuturesUnordered::new();
            let mut result = Ok(());
            for i in (p..total).step_by(count) {
                if duration.is_some_and(|d| start.elapsed() >= d) {
                    break;
                }
                if inflight.len() >= window
                    && let Some(Err(e)) = inflight.next().await
                {
                    result = Err(e);
                    break;
                }
                let sent_at = start.elapsed().as_micros();
                // The queue name makes ids unique across runs on one store (dedupe window).
                // Sized up front: `format!` would grow the string twice on the way.
                let mut id = String::with_capacity(queue.len() + 2 * 20 + 2);
                let _ = write!(id, "{i}-{sent_at}-{queue}");
                let env = Envelope::new(id, vec![queue.clone()], body.clone());
                let mut publish = bus.publish_envelope(env);
                // A publish the bus settles at once (the memory backend's) takes no slot in
                // the window; the others wait there.
                match futures::poll!(&mut publish) {
                    Poll::Ready(Err(e)) => {
                        result = Err(e);
                        break;
                    }
                    Poll::Ready(Ok(_)) => {
                        progress.sent.fetch_add(1, Ordering::Relaxed);
                    }
                    Poll::Pending => {
                        let progress = &progress;
                        inflight.push(async move {
                            publish.await?;
                            progress.sent.fetch_add(1, Ordering::Relaxed);
                            Ok::<(), BusError>(())
                        });
                    }
                }
            }
            while let Some(r) = inflight.next().await {
                if let Err(e) = r {
                    result = result.and(Err(e));
                }
            }
            done.fetch_add(1, Ordering::SeqCst);
            result
        }));
    }
    let mut consumers = Vec::new();
    for _ in 0..opts.consumers.max(1) {
        let (bus, queue, seen, progress, done) = (
            bus.clone(),
            queue.clone(),
            seen.clone(),
            progress.clone(),
            producers_done.clone(),
        );
        let producer_count = opts.producers.max(1) as u64;
        consumers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut duplicates = 0u64;
            let mut idle_since: Option<Instant> = None;
            let mut unacked = Vec::new();
            let mut last = start.elapsed();
            loop {
                let all_sent = done.load(Ordering::SeqCst) == producer_count;
                if all_sent
                    && progress.received.load(Ordering::SeqCst)
                        >= progress.sent.load(Ordering::SeqCst)
                {
                    break;
                }
                // The previous batch is acknowledged (all at once, so that a backend can settle
                // it together) while the next is asked for: both share one round trip.
                let (acked, batch) = tokio::join!(
                    async {
                        match unacked.is_empty() {
                            true => Ok(()),
                            false => bus.ack_all(&unacked).await,
                        }
                    },
                    bus.receive(&queue, 64, Duration::from_millis(100))
                );
                acked?;
                unacked.clear();
                let batch = batch?;
                if batch.is_empty() {
                    let since = *idle_since.get_or_insert_with(Instant::now);
                    if all_sent && since.elapsed() > Duration::from_secs(5) {
                        break;
                    }
                    continue;
                }
                idle_since = None;
                let now = start.elapsed();
                let mut fresh = 0;
                for d in &batch {
                    let mut parts = d.envelope.id.splitn(3, '-');
                    let (index, sent_at) = (
                        parts.next().unwrap_or_default(),
                        parts.next().unwrap_or_default(),
                    );
                    let (index, sent_at): (usize, u128) = (
                        index.parse().unwrap_or(usize::MAX),
                        sent_at.parse().unwrap_or(0),
                    );
                    match seen.get(index).map(|s| s.fetch_add(1, Ordering::SeqCst)) {
                        Some(0) => {
                            fresh += 1;
                            latencies.push(now.as_micros().saturating_sub(sent_at));
                        }
                        _ => duplicates += 1,
                    }
                }
                // One count per batch: a shared counter per message would cost the consumers
                // more than the bus does.
                progress.received.fetch_add(fresh, Ordering::SeqCst);
                unacked = batch;
                last = start.elapsed();
            }
            if !unacked.is_empty() {
                bus.ack_all(&unacked).await?;
                last = start.elapsed();
            }
            Ok::<_, BusError>((latencies, duplicates, last))
        }));
    }
    for p in producers {
        p.await
            .map_err(|e| BusError::Storage(format!("a producer task failed: {e}")))??;
    }
    let mut latencies = Vec::new();
    let mut duplicates = 0;
    let mut end = Duration::ZERO;
    for c in consumers {
        let (l, d, last) = c
            .await
            .map_err(|e| BusError::Storage(format!("a consumer task failed: {e}")))??;
        latencies.extend(l);
        duplicates += d;
        end = end.max(last);
    }
    let sent = progress.sent.load(Ordering::SeqCst);
    let received = progress.received.load(Ordering::SeqCst);
    Ok(BenchReport::from_latencies(
        sent, received, duplicates, latencies, end,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_are_json_of_the_asked_size() {
        for size in [1024, 200] {
            let p = payload(size);
            assert_eq!(p.len(), size);
            serde_json::from_slice::<serde_json::Value>(&p).unwrap();
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_memory_run_loses_nothing() {
        let opts = BenchOptions {
            messages: 2000,
            ..BenchOptions::default()
        };
        let progress = Arc::new(Progress::default());
        let report = run(&opts, progress.clone()).await.unwrap();
        assert_eq!(
            (report.sent, report.received, report.lost, report.duplicates),
            (2000, 2000, 0, 0)
        );
        assert!(report.p50_ms <= report.p99_ms);
        assert!(report.throughput_msgs_per_s > 0.0);
        assert_eq!(progress.received.load(Ordering::SeqCst), 2000);
    }
}
