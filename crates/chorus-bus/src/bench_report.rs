//! What a benchmark run measured, and the load a floor run repeats (shared by `chorus bench
//! bus` and the stores' floors, which know nothing of the bench's options).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde::Serialize;

use crate::error::{BusError, BusResult};

/// The result, as `chorus bench bus` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchReport {
    /// Messages published and acknowledged by the bus.
    pub sent: u64,
    /// Distinct messages received.
    pub received: u64,
    /// Sent but never received.
    pub lost: u64,
    /// Deliveries beyond the first of a message.
    pub duplicates: u64,
    /// Received messages per second, from the first publish to the last receipt.
    pub throughput_msgs_per_s: f64,
    /// Median publish-to-receipt latency.
    pub p50_ms: f64,
    /// 99th percentile publish-to-receipt latency.
    pub p99_ms: f64,
}

impl BenchReport {
    /// The report of a run that sent `sent` and received `received` messages (with
    /// `duplicates` more deliveries), the last at `end` after the start, each
    /// publish-to-receipt latency in microseconds in `latencies_us`.
    pub(crate) fn from_latencies(
        sent: u64,
        received: u64,
        duplicates: u64,
        mut latencies_us: Vec<u128>,
        end: Duration,
    ) -> BenchReport {
        latencies_us.sort_unstable();
        let pick = |q: f64| -> f64 {
            match latencies_us.len() {
                0 => 0.0,
                n => latencies_us[((n - 1) as f64 * q).round() as usize] as f64 / 1000.0,
            }
        };
        BenchReport {
            sent,
            received,
            lost: sent.saturating_sub(received),
            duplicates,
            throughput_msgs_per_s: received as f64 / end.as_secs_f64().max(1e-9),
            p50_ms: pick(0.50),
            p99_ms: pick(0.99),
        }
    }
}

/// The load a floor repeats: chorus's run's, in plain terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorLoad {
    /// Rows written and taken back.
    pub messages: usize,
    /// Size of each row's body, bytes.
    pub size: usize,
    /// Consuming tasks.
    pub consumers: usize,
    /// Inserts in flight at most.
    pub in_flight: usize,
    /// Operations per commit at most (SQLite).
    pub max_batch: usize,
}

/// Runs a floor's load: one producer calling `insert` with each row's send time (microseconds
/// after the start), at most `load.in_flight` at once, and `load.consumers` tasks calling
/// `take` (the send times of the rows it removed; none: it looks again after 1 ms) until every
/// row is back. The stores' floors differ only in those two operations.
pub(crate) async fn drive_floor<I, IF, T, TF>(
    load: &FloorLoad,
    insert: I,
    take: T,
) -> BusResult<BenchReport>
where
    I: Fn(i64) -> IF,
    IF: Future<Output = BusResult<()>>,
    T: Fn() -> TF + Clone + Send + 'static,
    TF: Future<Output = BusResult<Vec<i64>>> + Send,
{
    let total = load.messages.max(1) as u64;
    let start = Instant::now();
    let received = Arc::new(AtomicU64::new(0));
    let mut consumers = Vec::new();
    for _ in 0..load.consumers.max(1) {
        let (take, received) = (take.clone(), received.clone());
        consumers.push(tokio::spawn(async move {
            let (mut latencies, mut end) = (Vec::new(), Duration::ZERO);
            while received.load(Ordering::SeqCst) < total {
                let taken = take().await?;
                if taken.is_empty() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                let now = start.elapsed().as_micros();
                latencies.extend(
                    taken
                        .iter()
                        .map(|&sent| now.saturating_sub(u128::from(sent.unsigned_abs()))),
                );
                received.fetch_add(taken.len() as u64, Ordering::SeqCst);
                end = start.elapsed();
            }
            Ok::<_, BusError>((latencies, end))
        }));
    }
    let mut inflight = FuturesUnordered::new();
    for _ in 0..total {
        if inflight.len() >= load.in_flight.max(1)
            && let Some(result) = inflight.next().await
        {
            result?;
        }
        inflight.push(insert(
            i64::try_from(start.elapsed().as_micros()).unwrap_or(i64::MAX),
        ));
    }
    while let Some(result) = inflight.next().await {
        result?;
    }
    let (mut latencies, mut end) = (Vec::new(), Duration::ZERO);
    for c in consumers {
        let (l, e) = c
            .await
            .map_err(|e| BusError::Storage(format!("a consumer task failed: {e}")))??;
        latencies.extend(l);
        end = end.max(e);
    }
    let got = latencies.len() as u64;
    Ok(BenchReport::from_latencies(total, got, 0, latencies, end))
}
