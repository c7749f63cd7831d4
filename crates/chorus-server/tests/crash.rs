//! A bounded load of handoffs over HTTP during which the server process is killed with SIGKILL and
//! restarted on the same SQLite file: every acknowledged publish is delivered afterwards.
//!
//! `CHORUS_CRASH_HANDOFFS` sets how many handoffs are sent in all (default 2,000).
//! The server runs in a child process: this test binary itself (it has no libtest harness),
//! which serves instead of testing when `CHORUS_CRASH_CHILD_DB` names the database.

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chorus_server::{AgentEntry, Server, ServerConfig, Store, bind, hash_token};
use common::{SseReader, client, delivered};
use serde_json::Value;
use tokio::sync::watch;

const AGENTS: usize = 8;
const SINK_TOKEN: &str = "sink-token";
const CHILD_ENV: &str = "CHORUS_CRASH_CHILD_DB";

/// Handoffs per agent.
fn per_agent() -> usize {
    let total = std::env::var("CHORUS_CRASH_HANDOFFS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(2_000);
    total.div_ceil(AGENTS)
}

/// The seed's valid escalation, from `agent` to the sink, with its own UUID.
fn handoff(template: &Value, agent: usize, i: usize) -> (String, Value) {
    let id = format!("00000000-0000-4000-8{agent:03x}-{i:012x}");
    let mut h = template.clone();
    h["metadata"]["message_id"] = id.clone().into();
    h["metadata"]["sender_id"] = format!("a{agent}").into();
    h["metadata"]["recipient_id"] = "sink".into();
    (id, h)
}

fn token(agent: usize) -> String {
    format!("agent-{agent}-token")
}

fn child_config() -> ServerConfig {
    let mut c = ServerConfig {
        rate_per_sec: 0.0,
        ..ServerConfig::default()
    };
    c.agents.insert(
        "sink".into(),
        AgentEntry::with_token_hash(hash_token(SINK_TOKEN)),
    );
    for a in 0..AGENTS {
        c.agents.insert(
            format!("a{a}"),
            AgentEntry::with_token_hash(hash_token(&token(a))),
        );
    }
    c
}

/// Runs the test, or, in the child process, the server.
fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match std::env::var(CHILD_ENV) {
        Ok(db) => runtime.block_on(child_server(db)),
        Err(_) => runtime.block_on(acknowledged_publishes_survive_kill_9()),
    }
}

/// The server process: prints its address, then serves until killed.
async fn child_server(db: String) {
    let config = child_config();
    let bus = Store::sqlite(db).open(&config).await.expect("open store");
    let (listener, addr) = bind("127.0.0.1:0").await.expect("bind");
    println!("ADDR http://{addr}");
    Server::new(bus, &config)
        .serve(listener, std::future::pending())
        .await
        .expect("serve");
}

/// The server process, killed when dropped (also when the test fails).
struct ServerProcess(Child);

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the child server on `db`; returns it and its base URL.
fn spawn_server(db: &std::path::Path) -> (ServerProcess, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_ENV, db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server process");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let child = ServerProcess(child);
    while let Some(Ok(line)) = lines.next() {
        if let Some(base) = line.strip_prefix("ADDR ") {
            // Keep reading, so that a later print in the child never meets a closed pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return (child, base.to_owned());
        }
    }
    panic!("the server process printed no address");
}

/// Publishes every message of `agent`, retrying through crashes; returns the acknowledged
/// ids and the latency of each acknowledged publish.
async fn producer(
    agent: usize,
    base: watch::Receiver<String>,
    sent: Arc<AtomicUsize>,
) -> (Vec<String>, Vec<Duration>) {
    let http = client();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seeds/003-python-valid-escalation.json"
    );
    let template: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (mut acked, mut latencies) = (Vec::new(), Vec::new());
    for i in 0..per_agent() {
        let (id, body) = handoff(&template, agent, i);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "{id} was never accepted");
            let url = format!("{}/v1/messages", base.borrow().clone());
            let started = Instant::now();
            match http
                .post(url)
                .bearer_auth(token(agent))
                .json(&body)
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => {
                    latencies.push(started.elapsed());
                    acked.push(id);
                    sent.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Ok(r) => panic!("{id}: {}", r.status()),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
    (acked, latencies)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Kills the server with SIGKILL under load and restarts it: every acknowledged publish arrives.
async fn acknowledged_publishes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chorus.db");
    let (child, first) = spawn_server(&db);
    let (set_base, base) = watch::channel(first);
    let sent = Arc::new(AtomicUsize::new(0));
    let producers: Vec<_> = (0..AGENTS)
        .map(|a| tokio::spawn(producer(a, base.clone(), sent.clone())))
        .collect();

    // Kill the server once a third of the messages are acknowledged, then restart it.
    let total = AGENTS * per_agent();
    let deadline = Instant::now() + Duration::from_secs(120);
    while sent.load(Ordering::Relaxed) < total / 3 {
        assert!(Instant::now() < deadline, "the load did not get going");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(child); // SIGKILL
    let acked_before_kill = sent.load(Ordering::Relaxed);
    let (child, second) = spawn_server(&db);
    set_base.send(second.clone()).unwrap();

    let mut acked = HashSet::new();
    let mut latencies = Vec::new();
    for p in producers {
        let (ids, times) = p.await.unwrap();
        acked.extend(ids);
        latencies.extend(times);
    }
    assert_eq!(acked.len(), total);

    let mut inbox = SseReader::open_at(&second, "sink", SINK_TOKEN, None).await;
    let http = client();
    let mut received = HashSet::new();
    while !acked.is_subset(&received) {
        let event = inbox
            .next_within(Duration::from_secs(30))
            .await
            .unwrap_or_else(|| {
                let missing = acked.difference(&received).count();
                panic!("{missing} acknowledged publishes were not delivered")
            });
        let (id, _) = delivered(&event);
        let url = format!("{second}/v1/agents/sink/inbox/{id}/ack");
        let status = http
            .post(url)
            .bearer_auth(SINK_TOKEN)
            .send()
            .await
            .unwrap()
            .status();
        assert_eq!(status, 204, "ack {id}");
        received.insert(id);
    }
    assert!(received.is_subset(&acked), "only published ids arrive");
    drop(inbox);
    drop(child);

    latencies.sort();
    println!(
        "{total} handoffs from {AGENTS} agents, server killed after {acked_before_kill}: all delivered; publish latency p50 {:?}, p99 {:?}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
}
