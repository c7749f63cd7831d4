//! The HTTP path end to end (issue 19): 64 publishers POST 1 KiB chorus messages to a server on
//! 127.0.0.1 over a fresh SQLite store (validation on, as served), 8 agents read their inbox
//! streams and acknowledge over HTTP; beside it, in the same run, the SQLite bus alone doing the
//! same work through the `Bus` API (the floor; run again just before each run of the headline,
//! the batch-publish, the in-memory, the reqwest and the one-runtime rows, so that each pair
//! sees the same load on a shared machine). Prints medians, percentiles and the ratios to the
//! paired floor.
//!
//! The publishers, and the consumers' batch acks, use hyper's client connection (one each), the
//! leanest load generator the well-kept crates give: the floor pays for no client, and every
//! cycle a client spends is taken from the server on the same cores. The consumers read their
//! streams with reqwest and chorus-agent's SSE reader, as an agent does. The clients run on a
//! tokio runtime of their own, as the separate programs they are in a deployment: on the same
//! cores as the server, not on its scheduler. The row "reqwest publishers" runs the headline
//! with reqwest for the publishers and the acks, as most Rust programs would call the server;
//! the row "one runtime" runs it with the clients on the server's runtime.
//!
//! `cargo bench -p chorus-server --bench http_path` (about two minutes; `CHORUS_BENCH_MESSAGES`
//! sets the messages per run, 5,000 unless set; `CHORUS_BENCH_WORKERS` the tokio workers of the
//! server and the floor (and of the one-runtime row's clients), 4 unless set;
//! `CHORUS_BENCH_CLIENT_WORKERS` the clients', 2 unless set).

/// With feature `mimalloc`, the bench (the server, its clients and the floor alike) allocates
/// with mimalloc, as `chorus serve` built with that feature does.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "http_path/floor.rs"]
mod floor;
#[path = "http_path/load.rs"]
mod load;
#[path = "http_path/publisher.rs"]
mod publisher;
#[path = "http_path/reader.rs"]
mod reader;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use load::{Ack, Clients, Plan, Publish, Report};
use publisher::Client;

type Results = Arc<Mutex<BTreeMap<&'static str, Vec<Report>>>>;

/// The rows, in the order they run; the paced rows run at half their unpaced row's median rate.
const FLOOR: &str = "bus alone (floor)";
const HEADLINE: &str = "http, batch acks";
const BATCH: &str = "http, batch publish (16)";
const SINGLE_ACKS: &str = "http, single acks";
const PACED: &str = "http, half rate";
const BATCH_PACED: &str = "http, batch (16), half";
const CEILING: &str = "http, memory store";
/// The headline with reqwest for the publishers instead of hyper's client connection.
const REQWEST: &str = "http, reqwest publishers";
/// The headline with the clients on the server's runtime.
const ONE_RUNTIME: &str = "http, one runtime";
/// The floor runs just before each run of the headline, the batch and the memory rows.
const PAIRED: &str = "bus alone, paired";
const BATCH_PAIRED: &str = "bus alone, paired (16)";
const CEILING_PAIRED: &str = "bus alone, paired (mem)";
const REQWEST_PAIRED: &str = "bus alone, paired (reqwest)";
const ONE_RUNTIME_PAIRED: &str = "bus alone, paired (1 rt)";

/// The floor row run just before each run of `label`, for the rows compared pair by pair.
fn paired_with(label: &str) -> Option<&'static str> {
    match label {
        HEADLINE => Some(PAIRED),
        BATCH => Some(BATCH_PAIRED),
        CEILING => Some(CEILING_PAIRED),
        REQWEST => Some(REQWEST_PAIRED),
        ONE_RUNTIME => Some(ONE_RUNTIME_PAIRED),
        _ => None,
    }
}

fn runtime() -> tokio::runtime::Runtime {
    // As the bus bench: more workers than the 2 cores, so that a task waiting on the writer
    // thread does not hold the others back.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(env("CHORUS_BENCH_WORKERS", 4))
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The number in the environment variable `name`, else `default`.
pub(crate) fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn messages() -> usize {
    env("CHORUS_BENCH_MESSAGES", 5_000)
}

fn row(c: &mut Criterion, rt: &tokio::runtime::Runtime, results: &Results, label: &'static str) {
    let n = messages();
    let mut group = c.benchmark_group("http_path");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(1))
        .measurement_time(Duration::from_secs(1));
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(label, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if let Some(paired) = paired_with(label) {
                    // The floor again just before, so that each pair sees the same load.
                    let floor = rt.block_on(floor::bus_run(n));
                    results
                        .lock()
                        .unwrap()
                        .entry(paired)
                        .or_default()
                        .push(floor);
                }
                let report = match label {
                    FLOOR => rt.block_on(floor::bus_run(n)),
                    _ => {
                        let plan = plan(label, results);
                        rt.block_on(load::http_run(&plan, n))
                    }
                };
                total += report.flow;
                results
                    .lock()
                    .unwrap()
                    .entry(label)
                    .or_default()
                    .push(report);
            }
            total
        })
    });
    group.finish();
}

/// How a row publishes and acknowledges.
fn plan(label: &str, results: &Results) -> Plan {
    let headline = Plan {
        publish: Publish::Single,
        ack: Ack::Batch,
        pace: None,
        client: Client::Hyper,
        clients: Clients::Own,
        memory: false,
    };
    let batch = Plan {
        publish: Publish::Batch(16),
        ..headline
    };
    let half = |of: &str| median(results, of, |r| r.msgs_per_s).map(|rate| rate / 2.0);
    match label {
        SINGLE_ACKS => Plan {
            ack: Ack::Single,
            ..headline
        },
        BATCH => batch,
        PACED => Plan {
            pace: Some(half(HEADLINE).unwrap_or(500.0)),
            ..headline
        },
        BATCH_PACED => Plan {
            pace: Some(half(BATCH).unwrap_or(500.0)),
            ..batch
        },
        CEILING => Plan {
            memory: true,
            ..headline
        },
        REQWEST => Plan {
            client: Client::Reqwest,
            ..headline
        },
        ONE_RUNTIME => Plan {
            clients: Clients::Server,
            ..headline
        },
        _ => headline,
    }
}

fn median(results: &Results, label: &str, f: impl Fn(&Report) -> f64) -> Option<f64> {
    let results = results.lock().unwrap();
    let mut v: Vec<f64> = results.get(label)?.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The median ratio of each run of `label` to the floor run just before it.
fn paired_ratio(results: &Results, label: &str) -> Option<f64> {
    let results = results.lock().unwrap();
    let pairs = results
        .get(label)?
        .iter()
        .zip(results.get(paired_with(label)?)?);
    let mut ratios: Vec<f64> = pairs.map(|(h, f)| h.msgs_per_s / f.msgs_per_s).collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied()
}

fn summary(results: &Results) {
    // The column's floor: the headline's paired floor runs, else whichever floor rows ran.
    let floor = [
        PAIRED,
        FLOOR,
        BATCH_PAIRED,
        CEILING_PAIRED,
        REQWEST_PAIRED,
        ONE_RUNTIME_PAIRED,
    ]
    .into_iter()
    .find_map(|label| median(results, label, |r| r.msgs_per_s));
    println!(
        "\n{} messages per run, {} publishers, {} agents; medians over the runs (warm-up included):",
        messages(),
        load::PUBLISHERS,
        load::AGENTS
    );
    println!(
        "{:<26} {:>10} {:>7} {:>22} {:>22} {:>22}",
        "", "msgs/s", "floor", "publish p50/p99 ms", "deliver p50/p99 ms", "ack p50/p99 ms"
    );
    let labels: Vec<&'static str> = results.lock().unwrap().keys().copied().collect();
    for label in labels {
        let m = |f: fn(&Report) -> f64| median(results, label, f).unwrap_or(f64::NAN);
        let rate = m(|r| r.msgs_per_s);
        let ratio = floor.map_or(f64::NAN, |f| rate / f);
        println!(
            "{label:<26} {rate:>10.0} {ratio:>6.2}x {:>10.2} / {:>9.2} {:>10.2} / {:>9.2} {:>10.2} / {:>9.2}",
            m(|r| r.publish.0),
            m(|r| r.publish.1),
            m(|r| r.deliver.0),
            m(|r| r.deliver.1),
            m(|r| r.ack.0),
            m(|r| r.ack.1),
        );
    }
    println!();
    for (label, what) in [
        (HEADLINE, "one publish a request"),
        (BATCH, "batch publishes of 16"),
        (CEILING, "one publish a request, in-memory store"),
        (REQWEST, "one publish a request, reqwest publishers"),
        (
            ONE_RUNTIME,
            "one publish a request, clients on the server's runtime",
        ),
    ] {
        if let Some(ratio) = paired_ratio(results, label) {
            println!(
                "end to end / floor, {what}: {ratio:.2} (the median of the ratios of each run to the SQLite floor run just before it; bar: at least 0.50)",
            );
        }
    }
    for (label, what) in [(PACED, "one a request"), (BATCH_PACED, "batches of 16")] {
        if let Some(p99) = median(results, label, |r| r.publish.1) {
            let asked = median(results, label, |r| r.paced_at).unwrap_or(f64::NAN);
            println!(
                "publish p99 at {asked:.0} msgs/s, {what} (half its unpaced rate): {p99:.2} ms (bar: under 50 ms)"
            );
        }
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let rt = runtime();
    let results: Results = Arc::default();
    for label in [
        FLOOR,
        HEADLINE,
        BATCH,
        SINGLE_ACKS,
        PACED,
        BATCH_PACED,
        CEILING,
        REQWEST,
        ONE_RUNTIME,
    ] {
        row(&mut c, &rt, &results, label);
    }
    c.final_summary();
    summary(&results);
}
