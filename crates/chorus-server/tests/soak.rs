//! A soak with time compressed: steady publishing and consuming for a bounded time against a
//! server in a child process whose retention keeps everything only a few seconds, so that the
//! store turns over many times, as it would in weeks of service. Every message carries a trace
//! context; every tenth an image (kept as a blob); every twentieth is invalid (kept as a dead
//! letter). The server's resident memory and what it stores (its files, and on NATS and Redis
//! what its namespace holds on the server) are sampled throughout: after the warm-up (the first
//! third), neither may keep growing. Nothing may be lost: every accepted message is delivered
//! and acked, and the inbox is empty at the end. On SQLite, then on NATS and Redis when
//! CHORUS_TEST_NATS_URL and CHORUS_TEST_REDIS_URL are set.
//!
//! `CHORUS_SOAK_SECONDS` (default 90 on SQLite, 45 on NATS and Redis) and `CHORUS_SOAK_RATE`
//! (messages a second, default 250) set the load; the figures are printed (see
//! docs/performance.md).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chorus_server::{AgentEntry, ServerConfig, hash_token};
use common::{SseReader, child, client, delivered};
use serde_json::{Value, json};

const CHILD_ENV: &str = "CHORUS_SOAK_CHILD_STORE";
const ADMIN_TOKEN: &str = "soak-admin";
const PRODUCERS: usize = 4;
const CONSUMERS: usize = 2;
/// Seconds each kind of record is kept: the store turns over every few seconds.
const KEEP_SECS: f64 = 4.0;

fn token(agent: &str) -> String {
    format!("{agent}-soak-token")
}

fn child_config() -> ServerConfig {
    let mut c = ServerConfig {
        admin_token_sha256: Some(hash_token(ADMIN_TOKEN)),
        rate_per_sec: 0.0,
        settle_rate_per_sec: 0.0,
        // The test's Redis keeps nothing on disk (redis_persistence.rs tests the refusal).
        accept_volatile_store: true,
        ..ServerConfig::default()
    };
    c.retention.messages_secs = KEEP_SECS;
    c.retention.dead_letters_secs = KEEP_SECS;
    c.retention.blobs_secs = Some(KEEP_SECS);
    c.retention.traces_secs = KEEP_SECS;
    c.retention.confirmations_secs = KEEP_SECS;
    // The delivery history and journal records, which grow with the messages.
    c.retention.records_secs = Some(KEEP_SECS);
    c.retention.interval_secs = 0.5;
    for agent in ["sink"]
        .into_iter()
        .map(String::from)
        .chain((0..PRODUCERS).map(|p| format!("p{p}")))
    {
        let entry = AgentEntry::with_token_hash(hash_token(&token(&agent)));
        c.agents.insert(agent, entry);
    }
    c
}

fn env_number(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match std::env::var(CHILD_ENV) {
        Ok(store) => runtime.block_on(child::serve(&store, &child_config(), true)),
        Err(_) => runtime.block_on(soak()),
    }
}

/// A 1x1 PNG.
const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// The PNG with `tag` after its end (readers ignore it), as a data URL: a blob of its own.
fn image(tag: &str) -> String {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut bytes = engine.decode(PIXEL).unwrap();
    bytes.extend_from_slice(tag.as_bytes());
    format!("data:image/png;base64,{}", engine.encode(bytes))
}

/// Message `n` of producer `p`: an image every tenth, invalid (no content) every twentieth.
fn message(p: usize, n: usize) -> (bool, Value) {
    let id = format!("p{p}-m{n}");
    let mut m = json!({"role": "user", "id": id, "name": format!("p{p}"), "recipient": "sink",
        "content": format!("message {n} of p{p}: {}", "lorem ipsum ".repeat(150)),
        "metadata": {"task_id": format!("task-{}", n % 50)}});
    if n.is_multiple_of(10) {
        m["content"] = json!([{"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": image(&id)}}]);
    }
    let valid = n % 20 != 7;
    if !valid {
        m["content"] = json!(42);
    }
    (valid, m)
}

/// Publishes at `rate` messages a second until `stop`; counts what was accepted and refused.
async fn producer(
    p: usize,
    base: String,
    rate: f64,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
) {
    let http = client();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let (valid, body) = message(p, n);
        n += 1;
        let status = http
            .post(format!("{base}/v1/messages"))
            .bearer_auth(token(&format!("p{p}")))
            .header(
                "traceparent",
                format!("00-{:032x}-{:016x}-01", n + 1, p + 1),
            )
            .json(&body)
            .send()
            .await
            .expect("publish")
            .status()
            .as_u16();
        match (valid, status) {
            (true, 201) => accepted.fetch_add(1, Ordering::Relaxed),
            (false, 422) => refused.fetch_add(1, Ordering::Relaxed),
            other => panic!("message {n} of p{p}: {other:?}"),
        };
    }
}

/// Reads the sink's inbox and acks every delivery until `stop` and the inbox is drained.
async fn consumer(base: String, stop: Arc<AtomicBool>, acked: Arc<AtomicUsize>) {
    let http = client();
    let mut inbox = SseReader::try_open_url(
        &format!("{base}/v1/agents/sink/inbox?max_in_flight=64"),
        &token("sink"),
        None,
    )
    .await
    .expect("the inbox stream");
    loop {
        let Some(event) = inbox
            .try_next_within(Duration::from_millis(500))
            .await
            .expect("the stream stays open")
        else {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            continue;
        };
        let (id, attempt) = delivered(&event);
        let status = http
            .post(format!(
                "{base}/v1/agents/sink/inbox/{id}/ack?attempt={attempt}"
            ))
            .bearer_auth(token("sink"))
            .send()
            .await
            .expect("ack")
            .status();
        assert_eq!(status, 204, "ack {id}");
        acked.fetch_add(1, Ordering::Relaxed);
    }
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Bytes of every file under `dir`.
fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path: PathBuf = entry.path();
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(path),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

/// The median of `values`.
fn median(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values[values.len() / 2]
}

/// The value of the `/metrics` line that starts with `name` (labels included).
async fn metric(base: &str, name: &str) -> Option<u64> {
    child::metric(base, ADMIN_TOKEN, name).await
}

/// The sink's inbox backlog.
async fn backlog(base: &str) -> Option<u64> {
    metric(base, r#"chorus_inbox_backlog{inbox="sink"}"#).await
}

/// The soak on SQLite (`CHORUS_SOAK_SECONDS`, default 90), then on NATS and Redis (default 45
/// each) when CHORUS_TEST_NATS_URL and CHORUS_TEST_REDIS_URL are set; a store whose variable is
/// not set is said to be not soaked.
async fn soak() {
    let rate = env_number("CHORUS_SOAK_RATE", 250.0);
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite:{}", dir.path().join("chorus.db").display());
    let seconds = env_number("CHORUS_SOAK_SECONDS", 90.0);
    soak_on("SQLite", &sqlite, dir.path(), seconds, rate).await;
    for (name, var) in common::SERVER_STORES {
        let Some(url) = common::server_url("the soak", name, var) else {
            continue;
        };
        let address = common::fresh_namespace(&url);
        let dir = tempfile::tempdir().unwrap();
        let seconds = env_number("CHORUS_SOAK_SECONDS", 45.0);
        soak_on(name, &address, dir.path(), seconds, rate).await;
        common::destroy_namespace(&address).await;
    }
}

/// Files under `dir` (the SQLite store, the side stores and blobs) and what the store holds on
/// its server (NATS, Redis).
async fn footprint(dir: &Path, store: &chorus_bus::StoreAddress) -> u64 {
    let remote = match store {
        chorus_bus::StoreAddress::Sqlite(_) => 0,
        other => other
            .stored_bytes()
            .await
            .expect("the store's size")
            .unwrap_or(0),
    };
    disk_bytes(dir) + remote
}

/// Soaks a server on `store` (its side files in `dir`) for `seconds` at `rate` messages a
/// second.
async fn soak_on(name: &str, store: &str, dir: &Path, seconds: f64, rate: f64) {
    let address = chorus_server::Store::parse(store)
        .expect("a store address")
        .address()
        .clone();
    let (server, base) = child::spawn_server_with(CHILD_ENV, store, &[], Some(dir));
    let stop = Arc::new(AtomicBool::new(false));
    let (accepted, refused, acked) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let consumers: Vec<_> = (0..CONSUMERS)
        .map(|_| tokio::spawn(consumer(base.clone(), stop.clone(), acked.clone())))
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            tokio::spawn(producer(
                p,
                base.clone(),
                rate / PRODUCERS as f64,
                stop.clone(),
                accepted.clone(),
                refused.clone(),
            ))
        })
        .collect();

    // Sample every 3 s: (seconds, RSS KiB, disk bytes, accepted, acked).
    let started = Instant::now();
    let mut samples: Vec<(u64, u64, u64, usize, usize)> = Vec::new();
    while started.elapsed() < Duration::from_secs_f64(seconds) {
        tokio::time::sleep(Duration::from_secs(3)).await;
        samples.push((
            started.elapsed().as_secs(),
            rss_kib(server.pid()),
            footprint(dir, &address).await,
            accepted.load(Ordering::Relaxed),
            acked.load(Ordering::Relaxed),
        ));
    }
    stop.store(true, Ordering::Relaxed);
    for p in producers {
        p.await.expect("a producer");
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while acked.load(Ordering::Relaxed) < accepted.load(Ordering::Relaxed)
        || backlog(&base).await != Some(0)
    {
        assert!(
            Instant::now() < deadline,
            "{} accepted, {} acked: messages were lost",
            accepted.load(Ordering::Relaxed),
            acked.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for c in consumers {
        c.await.expect("a consumer");
    }

    // Retention did the work: most messages, dead letters, blobs and records (the delivery
    // histories) were pruned meanwhile.
    let mut pruned = Vec::new();
    for kind in ["messages", "dead_letters", "blobs", "traces", "records"] {
        let n = metric(&base, &format!(r#"chorus_pruned_total{{kind="{kind}"}}"#))
            .await
            .unwrap_or(0);
        pruned.push((kind, n));
    }
    let mut out = std::io::stderr();
    let _ = writeln!(
        out,
        "\nsoak on {name}: t(s)  RSS(MiB)  disk(MiB)  accepted  acked"
    );
    for (t, rss, disk, a, k) in &samples {
        let _ = writeln!(
            out,
            "soak: {t:>4}  {:>8.1}  {:>9.2}  {a:>8}  {k:>5}",
            *rss as f64 / 1024.0,
            *disk as f64 / 1048576.0
        );
    }
    let third = samples.len() / 3;
    assert!(third >= 2, "run at least 18 s to have samples to compare");
    let middle = &samples[third..2 * third];
    let last = &samples[2 * third..];
    let rss = |s: &[(u64, u64, u64, usize, usize)]| median(s.iter().map(|x| x.1).collect());
    let disk_max = |s: &[(u64, u64, u64, usize, usize)]| s.iter().map(|x| x.2).max().unwrap();
    let (rss_mid, rss_last) = (rss(middle), rss(last));
    let (disk_mid, disk_last) = (disk_max(middle), disk_max(last));
    let total = accepted.load(Ordering::Relaxed);
    println!(
        "soak on {name}: {seconds} s at {rate}/s: {total} accepted, {} refused (dead letters), all acked; \
         RSS median {:.1} MiB (middle third) -> {:.1} MiB (last third); disk max {:.2} MiB -> {:.2} MiB; \
         retention {KEEP_SECS} s, so the store turned over about {:.0} times",
        refused.load(Ordering::Relaxed),
        rss_mid as f64 / 1024.0,
        rss_last as f64 / 1024.0,
        disk_mid as f64 / 1048576.0,
        disk_last as f64 / 1048576.0,
        seconds / KEEP_SECS
    );
    let _ = writeln!(out, "soak: pruned {pruned:?}");
    let total_u64 = total as u64;
    for (kind, n) in &pruned {
        assert!(*n > 0, "nothing of kind {kind} was pruned: {pruned:?}");
    }
    assert!(
        pruned[0].1 >= total_u64 / 2,
        "fewer than half of {total} messages pruned: {pruned:?}"
    );
    assert!(
        rss_last <= rss_mid + rss_mid / 5 + 8 * 1024,
        "{name}: resident memory keeps growing: {rss_mid} KiB -> {rss_last} KiB"
    );
    assert!(
        disk_last <= disk_mid + disk_mid / 5 + 1024 * 1024,
        "{name}: the store keeps growing: {disk_mid} -> {disk_last} bytes"
    );
    drop(server);
}
