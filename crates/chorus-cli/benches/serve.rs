//! The product as it ships: the real `chorus serve` binary (this package's, built by `cargo
//! bench` with the bench profile) started as a child process with its default configuration
//! (the default store, logging at `info`, the default limits; only the agents and their tokens
//! are configured), driven over HTTP by 64 publishers and 8 agents reading their inbox streams
//! and acknowledging in batches (the clients of chorus-server's http_path bench, on a runtime of
//! their own in this process). Each run of a row is paired with a run of the floor just before
//! it: the real `chorus bench bus --backend sqlite:…` child process on the same machine, same
//! message size. Rows: one publish a request; batch publishes of 16; one publish a request
//! paced at half the first row's median rate (for its publish p99). Also measured: the bytes
//! the server logs per message at its default level.
//!
//! `cargo bench -p chorus-cli --bench serve` (`CHORUS_BENCH_MESSAGES` messages a run, 5,000
//! unless set).

// The in-process rows of the shared code (its `http_run`, the in-memory store) are not used here.
#[allow(dead_code)]
#[path = "../../chorus-server/benches/http_path/load.rs"]
mod load;
#[allow(dead_code)]
#[path = "../../chorus-server/benches/http_path/publisher.rs"]
mod publisher;
#[allow(dead_code)]
#[path = "../../chorus-server/benches/http_path/reader.rs"]
mod reader;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use load::{Ack, Clients, Plan, Publish, Report};
use publisher::Client;

/// The number in the environment variable `name`, else `default` (the shared client code's
/// settings: `CHORUS_BENCH_CLIENT_WORKERS`).
pub(crate) fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const SINGLE: &str = "chorus serve, one publish a request";
const BATCH: &str = "chorus serve, batch publish (16)";
const PACED: &str = "chorus serve, half rate";

/// One run: the row's report, the floor run just before it, log bytes per message.
struct Run {
    report: Report,
    floor: f64,
    log_bytes_per_msg: f64,
}

type Results = Arc<Mutex<BTreeMap<&'static str, Vec<Run>>>>;

fn chorus() -> Command {
    Command::new(env!("CARGO_BIN_EXE_chorus"))
}

/// The config file: the bench's agents and publishers with their tokens, after the top-level
/// settings in `CHORUS_BENCH_SERVE_CONFIG` if it is set (e.g. `delivery_history = false`, to
/// measure what a default costs), nothing else.
fn write_config(dir: &Path) -> std::path::PathBuf {
    let mut text = std::env::var("CHORUS_BENCH_SERVE_CONFIG").unwrap_or_default();
    text.push('\n');
    let ids = (0..load::AGENTS)
        .map(load::agent)
        .chain((0..load::PUBLISHERS).map(load::sender));
    for id in ids {
        let hash = chorus_server::hash_token(&load::token(&id));
        text.push_str(&format!("[agents.{id}]\ntoken_sha256 = \"{hash}\"\n"));
    }
    let path = dir.join("chorus.toml");
    std::fs::write(&path, text).expect("write the config");
    path
}

/// `chorus bench bus` on a fresh SQLite file: its throughput, messages a second.
fn floor(n: usize) -> f64 {
    let dir = tempfile::tempdir().expect("temporary folder");
    let backend = format!("sqlite:{}", dir.path().join("floor.db").display());
    let out = chorus()
        .args([
            "bench",
            "bus",
            "--backend",
            &backend,
            "--json",
            "--no-floor",
        ])
        .args(["--messages", &n.to_string()])
        .stdin(Stdio::null())
        .output()
        .expect("chorus bench bus runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON");
    assert_eq!(report["lost"], 0, "{report}");
    report["throughput_msgs_per_s"]
        .as_f64()
        .expect("its throughput")
}

/// A running `chorus serve` and where its log goes.
struct Served {
    child: Child,
    addr: std::net::SocketAddr,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn serve() -> Served {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = write_config(dir.path());
    let log = dir.path().join("serve.log");
    let mut child = chorus()
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("the log file"))
        .spawn()
        .expect("chorus serve starts");
    let mut first = String::new();
    let mut stdout = BufReader::new(child.stdout.take().expect("its stdout"));
    stdout.read_line(&mut first).expect("its first line");
    // Read to the end: a closed pipe would end the server at its next line (the admin token).
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    // "chorus serve: listening on http://ADDR (store …)"
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    Served {
        child,
        addr,
        log,
        _dir: dir,
    }
}

impl Served {
    /// SIGTERM, then the log's size.
    fn stop(mut self) -> u64 {
        // SAFETY: kill with a pid of our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let status = self.child.wait().expect("chorus serve stops");
        assert!(status.success(), "chorus serve ended with {status}");
        std::fs::metadata(&self.log).map_or(0, |m| m.len())
    }
}

fn plan(label: &str, results: &Results) -> Plan {
    let single = Plan {
        publish: Publish::Single,
        ack: Ack::Batch,
        pace: None,
        client: Client::Hyper,
        clients: Clients::Own,
        memory: false,
    };
    match label {
        BATCH => Plan {
            publish: Publish::Batch(16),
            ..single
        },
        PACED => Plan {
            pace: Some(median(results, SINGLE, |r| r.report.msgs_per_s).unwrap_or(500.0) / 2.0),
            ..single
        },
        _ => single,
    }
}

fn row(c: &mut Criterion, results: &Results, label: &'static str, n: usize) {
    let mut group = c.benchmark_group("serve");
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
                let floor = floor(n);
                let served = serve();
                let plan = plan(label, results);
                let clients = load::clients_run(plan, n, served.addr);
                let report = futures::executor::block_on(load::client_runtime().spawn(clients))
                    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                let log = served.stop();
                total += report.flow;
                results.lock().unwrap().entry(label).or_default().push(Run {
                    report,
                    floor,
                    log_bytes_per_msg: log as f64 / n as f64,
                });
            }
            total
        })
    });
    group.finish();
}

fn median(results: &Results, label: &str, f: impl Fn(&Run) -> f64) -> Option<f64> {
    let results = results.lock().unwrap();
    let mut v: Vec<f64> = results.get(label)?.iter().map(f).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

fn main() {
    let n = env("CHORUS_BENCH_MESSAGES", 5_000);
    let mut c = Criterion::default().configure_from_args();
    let results: Results = Arc::default();
    for label in [SINGLE, BATCH, PACED] {
        row(&mut c, &results, label, n);
    }
    c.final_summary();
    println!(
        "\n{n} messages a run, {} publishers, {} agents, the shipped binary with its defaults; medians over the runs:",
        load::PUBLISHERS,
        load::AGENTS
    );
    println!(
        "{:<38} {:>9} {:>9} {:>8} {:>20} {:>20} {:>9}",
        "", "msgs/s", "floor", "ratio", "publish p50/p99 ms", "deliver p50/p99 ms", "log B/msg"
    );
    let labels: Vec<&'static str> = results.lock().unwrap().keys().copied().collect();
    for label in labels {
        let m = |f: fn(&Run) -> f64| median(&results, label, f).unwrap_or(f64::NAN);
        println!(
            "{label:<38} {:>9.0} {:>9.0} {:>7.2}x {:>9.2} / {:>8.2} {:>9.2} / {:>8.2} {:>9.0}",
            m(|r| r.report.msgs_per_s),
            m(|r| r.floor),
            // The median of each run's ratio to the floor run just before it.
            m(|r| r.report.msgs_per_s / r.floor),
            m(|r| r.report.publish.0),
            m(|r| r.report.publish.1),
            m(|r| r.report.deliver.0),
            m(|r| r.report.deliver.1),
            m(|r| r.log_bytes_per_msg),
        );
    }
    println!(
        "bars: one a request at least 0.50x the floor, batches at least 0.90x, publish p99 at half rate under 20 ms"
    );
}
