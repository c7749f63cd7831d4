//! Bus throughput: 1 KiB handoffs, 1 producer, 4 consumers, each message acked.
//!
//! Side by side in one run: memory; sqlite group commit against sqlite with one fsync per
//! message; the NATS backend against raw async-nats JetStream publish-with-ack + pull-and-ack
//! (each ack confirmed by the server, as chorus's are), on the one server and on a three-node
//! cluster this bench starts, with every stream replicated three times; the Redis backend
//! against raw `XADD` + `XREADGROUP` + `XACK`/`XDEL`. Server backends run when
//! CHORUS_TEST_NATS_URL / CHORUS_TEST_REDIS_URL are set. Prints medians and ratios at the end.
//!
//! `cargo bench -p chorus-bus --features nats,redis --bench bus`

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chorus_bus::StoreAddress;
use chorus_bus::bench::{BenchOptions, BenchReport, Progress, run};
use criterion::{Criterion, Throughput};

#[cfg(feature = "nats")]
#[path = "../tests/nats_cluster/mod.rs"]
mod nats_cluster;

type Results = Arc<Mutex<BTreeMap<&'static str, Vec<(f64, f64, f64)>>>>;

fn runtime() -> tokio::runtime::Runtime {
    // Four workers (one per task: the producer and the consumers share them); on this
    // 2-core machine the default of one per core measured lower for memory and sqlite.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

fn record(results: &Results, label: &'static str, r: &BenchReport) {
    assert_eq!((r.lost, r.duplicates), (0, 0), "{label}: {r:?}");
    results.lock().unwrap().entry(label).or_default().push((
        r.throughput_msgs_per_s,
        r.p50_ms,
        r.p99_ms,
    ));
}

/// The time criterion is given for one run: the message flow, from the first publish to the
/// last receipt, as the report's throughput counts it (opening the store, creating the
/// stream and dropping the bus afterwards are left out, so both lines show one figure).
fn flow_time(r: &BenchReport) -> Duration {
    Duration::from_secs_f64(r.received as f64 / r.throughput_msgs_per_s.max(1e-9))
}

fn bench_backend(c: &mut Criterion, results: &Results, label: &'static str, opts: BenchOptions) {
    let messages = opts.messages;
    bench_raw(c, results, label, messages, || async {
        run(&opts, Arc::new(Progress::default())).await.unwrap()
    });
}

#[cfg(feature = "nats")]
mod raw_nats {
    //! The anchor: async-nats JetStream publish-with-ack and pull-and-ack, no chorus code.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    use async_nats::jetstream::{self, consumer::pull, stream};
    use chorus_bus::bench::BenchReport;
    use futures::StreamExt;
    use futures::stream::FuturesUnordered;

    pub async fn run(
        servers: &[String],
        replicas: usize,
        messages: usize,
        size: usize,
    ) -> BenchReport {
        let client = async_nats::connect(servers).await.expect("NATS reachable");
        let js = jetstream::new(client);
        let name = format!("chorus_raw_{}_{}", std::process::id(), chorus_bus::now_ms());
        let stream = js
            .create_stream(stream::Config {
                name: name.clone(),
                subjects: vec![format!("{name}.in")],
                retention: stream::RetentionPolicy::WorkQueue,
                num_replicas: replicas,
                ..Default::default()
            })
            .await
            .unwrap();
        let consumer: jetstream::consumer::PullConsumer = stream
            .create_consumer(pull::Config {
                durable_name: Some("raw".into()),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                max_ack_pending: 100_000,
                ..Default::default()
            })
            .await
            .unwrap();
        let start = Instant::now();
        let received = Arc::new(AtomicU64::new(0));
        let mut consumers = Vec::new();
        for _ in 0..4 {
            let (consumer, received) = (consumer.clone(), received.clone());
            consumers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                while received.load(Ordering::SeqCst) < messages as u64 {
                    let mut batch = consumer
                        .fetch()
                        .max_messages(64)
                        .expires(Duration::from_millis(100))
                        .messages()
                        .await
                        .unwrap();
                    let mut got = Vec::new();
                    while let Some(m) = batch.next().await {
                        let m = m.unwrap();
                        let sent: u128 = std::str::from_utf8(&m.payload[..20])
                            .unwrap()
                            .trim()
                            .parse()
                            .unwrap();
                        latencies.push(start.elapsed().as_micros() - sent);
                        got.push(m);
                    }
                    // Each ack confirmed by the server, as chorus confirms each before its 204;
                    // the acks of one fetch sent together, as chorus's batch ack sends them.
                    futures::future::try_join_all(got.iter().map(|m| m.double_ack()))
                        .await
                        .unwrap();
                    received.fetch_add(got.len() as u64, Ordering::SeqCst);
                }
                (latencies, start.elapsed())
            }));
        }
        let mut inflight = FuturesUnordered::new();
        for _ in 0..messages {
            if inflight.len() >= 256 {
                inflight.next().await.unwrap();
            }
            let mut payload = format!("{:>20}", start.elapsed().as_micros()).into_bytes();
            payload.resize(size.max(20), b'x');
            let ack = js
                .publish(format!("{name}.in"), payload.into())
                .await
                .unwrap();
            inflight.push(async move { ack.await.unwrap() });
        }
        while inflight.next().await.is_some() {}
        let report = super::anchor_report(messages, consumers).await;
        js.delete_stream(&name).await.unwrap();
        report
    }
}

#[cfg(feature = "redis")]
mod raw_redis {
    //! The anchor: `XADD` by one producer (256 in flight), `XREADGROUP` by four consumers of one
    //! group, `XACK` + `XDEL` of what each read got in one atomic pipeline, no chorus code.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    use chorus_bus::bench::BenchReport;
    use futures::StreamExt;
    use futures::stream::FuturesUnordered;
    use redis::streams::StreamReadReply;

    pub async fn run(url: &str, messages: usize, size: usize) -> BenchReport {
        let client = redis::Client::open(url).unwrap();
        let con = client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis reachable");
        let key = format!("chorus_raw_{}_{}", std::process::id(), chorus_bus::now_ms());
        let _: () = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&key)
            .arg("g")
            .arg("0")
            .arg("MKSTREAM")
            .query_async(&mut con.clone())
            .await
            .unwrap();
        let start = Instant::now();
        let received = Arc::new(AtomicU64::new(0));
        let mut consumers = Vec::new();
        for c in 0..4 {
            let (mut con, received, key) = (con.clone(), received.clone(), key.clone());
            consumers.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                while received.load(Ordering::SeqCst) < messages as u64 {
                    let reply: Option<StreamReadReply> = redis::cmd("XREADGROUP")
                        .arg("GROUP")
                        .arg("g")
                        .arg(format!("c{c}"))
                        .arg("COUNT")
                        .arg(64)
                        .arg("BLOCK")
                        .arg(100)
                        .arg("STREAMS")
                        .arg(&key)
                        .arg(">")
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    let mut ids = Vec::new();
                    for entry in reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids) {
                        let Some(redis::Value::BulkString(payload)) = entry.map.get("m") else {
                            panic!("an entry without its field");
                        };
                        let sent: u128 = std::str::from_utf8(&payload[..20])
                            .unwrap()
                            .trim()
                            .parse()
                            .unwrap();
                        latencies.push(start.elapsed().as_micros() - sent);
                        ids.push(entry.id);
                    }
                    if ids.is_empty() {
                        continue;
                    }
                    // The entries of one read settled together, in one atomic pipeline.
                    let _: (i64, i64) = redis::pipe()
                        .atomic()
                        .xack(&key, "g", &ids)
                        .xdel(&key, &ids)
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    received.fetch_add(ids.len() as u64, Ordering::SeqCst);
                }
                (latencies, start.elapsed())
            }));
        }
        let mut inflight = FuturesUnordered::new();
        for _ in 0..messages {
            if inflight.len() >= 256 {
                inflight.next().await.unwrap();
            }
            let mut payload = format!("{:>20}", start.elapsed().as_micros()).into_bytes();
            payload.resize(size.max(20), b'x');
            let (mut con, key) = (con.clone(), key.clone());
            inflight.push(async move {
                let _: String = redis::cmd("XADD")
                    .arg(&key)
                    .arg("*")
                    .arg("m")
                    .arg(payload)
                    .query_async(&mut con)
                    .await
                    .unwrap();
            });
        }
        while inflight.next().await.is_some() {}
        let report = super::anchor_report(messages, consumers).await;
        let _: () = redis::cmd("UNLINK")
            .arg(&key)
            .query_async(&mut con.clone())
            .await
            .unwrap();
        report
    }
}

/// The report of an anchor's run of `messages`: its consumers' latencies (µs) and when each
/// finished, gathered.
#[cfg(any(feature = "nats", feature = "redis"))]
async fn anchor_report(
    messages: usize,
    consumers: Vec<tokio::task::JoinHandle<(Vec<u128>, Duration)>>,
) -> BenchReport {
    let mut all = Vec::new();
    let mut end = Duration::ZERO;
    for c in consumers {
        let (l, e) = c.await.unwrap();
        all.extend(l);
        end = end.max(e);
    }
    all.sort_unstable();
    let pick = |q: f64| all[((all.len() - 1) as f64 * q).round() as usize] as f64 / 1000.0;
    BenchReport {
        sent: messages as u64,
        received: all.len() as u64,
        lost: (messages - all.len()) as u64,
        duplicates: 0,
        throughput_msgs_per_s: all.len() as f64 / end.as_secs_f64(),
        p50_ms: pick(0.5),
        p99_ms: pick(0.99),
    }
}

/// Runs `run` (a chorus backend's or a raw anchor's run of `messages`) as a criterion function
/// named `label`, recording its reports.
fn bench_raw<F: std::future::Future<Output = BenchReport>>(
    c: &mut Criterion,
    results: &Results,
    label: &'static str,
    messages: usize,
    run: impl Fn() -> F,
) {
    let rt = runtime();
    let mut group = c.benchmark_group("bus");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(messages as u64));
    group.bench_function(label, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let report = rt.block_on(run());
                total += flow_time(&report);
                record(results, label, &report);
            }
            total
        })
    });
    group.finish();
}

fn median(v: &[(f64, f64, f64)]) -> (f64, f64, f64) {
    let mid = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    (
        mid(v.iter().map(|r| r.0).collect()),
        mid(v.iter().map(|r| r.1).collect()),
        mid(v.iter().map(|r| r.2).collect()),
    )
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let results: Results = Arc::default();
    let dir = tempfile::tempdir().unwrap();
    let base = BenchOptions::default();
    bench_backend(
        &mut c,
        &results,
        "memory",
        BenchOptions {
            messages: 100_000,
            ..base.clone()
        },
    );
    let sqlite = |name: &str| StoreAddress::Sqlite(dir.path().join(name));
    bench_backend(
        &mut c,
        &results,
        "sqlite group commit",
        BenchOptions {
            backend: sqlite("group.db"),
            messages: 20_000,
            ..base.clone()
        },
    );
    bench_backend(
        &mut c,
        &results,
        "sqlite one fsync per op (anchor)",
        BenchOptions {
            backend: sqlite("single.db"),
            messages: 2_000,
            max_batch: 1,
            ..base.clone()
        },
    );
    #[cfg(feature = "nats")]
    if let Ok(url) = std::env::var("CHORUS_TEST_NATS_URL") {
        bench_backend(
            &mut c,
            &results,
            "nats",
            BenchOptions {
                backend: StoreAddress::parse(&url)
                    .expect("CHORUS_TEST_NATS_URL is a nats:// address"),
                messages: 20_000,
                ..base.clone()
            },
        );
        let one = vec![url.clone()];
        bench_raw(&mut c, &results, "raw async-nats (anchor)", 20_000, || {
            raw_nats::run(&one, 1, 20_000, 1024)
        });
        // The same on a three-node cluster, every stream replicated three times.
        let cluster = nats_cluster::Cluster::start(3);
        bench_backend(
            &mut c,
            &results,
            "nats R3 cluster",
            BenchOptions {
                backend: StoreAddress::parse(&cluster.url(3)).expect("the cluster's address"),
                messages: 20_000,
                ..base.clone()
            },
        );
        let servers: Vec<String> = (cluster.nodes.iter())
            .map(|n| format!("nats://127.0.0.1:{}", n.port))
            .collect();
        bench_raw(
            &mut c,
            &results,
            "raw async-nats R3 (anchor)",
            20_000,
            || raw_nats::run(&servers, 3, 20_000, 1024),
        );
        drop(cluster);
    }
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("CHORUS_TEST_REDIS_URL") {
        bench_backend(
            &mut c,
            &results,
            "redis",
            BenchOptions {
                backend: StoreAddress::parse(&url)
                    .expect("CHORUS_TEST_REDIS_URL is a redis:// address"),
                messages: 20_000,
                ..base.clone()
            },
        );
        bench_raw(
            &mut c,
            &results,
            "raw redis streams (anchor)",
            20_000,
            || raw_redis::run(&url, 20_000, 1024),
        );
    }
    c.final_summary();
    let results = results.lock().unwrap();
    println!("\nmedians over all runs (1 KiB, 1 producer, 4 consumers):");
    println!(
        "{:<36} {:>14} {:>9} {:>9}",
        "backend", "msgs/s", "p50 ms", "p99 ms"
    );
    for (label, runs) in results.iter() {
        let (t, p50, p99) = median(runs);
        println!("{label:<36} {t:>14.0} {p50:>9.2} {p99:>9.2}");
    }
    let ratio = |a: &str, b: &str| {
        let (Some(x), Some(y)) = (results.get(a), results.get(b)) else {
            return;
        };
        println!("ratio {a} / {b}: {:.2}", median(x).0 / median(y).0);
    };
    ratio("sqlite group commit", "sqlite one fsync per op (anchor)");
    ratio("nats", "raw async-nats (anchor)");
    ratio("nats R3 cluster", "raw async-nats R3 (anchor)");
    ratio("redis", "raw redis streams (anchor)");
}
