//! What a benchmark run measured, and the load a floor run repeats (shared by `chorus bench
//! bus` and the stores' floors, which know nothing of the bench's options).

use std::time::Duration;

use serde::Serialize;

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
