//! A bounded load of handoffs over HTTP to a pool of workers (1, 4 and 16 streams reading the
//! recipient's inbox, one run each) during which one more worker is killed while it holds
//! messages, and the server process is killed with SIGKILL and restarted on the same store again
//! and again: between publish requests (none in flight); at each step of a publish's commit
//! where the store can be cut (SQLite: rows written, `COMMIT` not run; NATS: the id claimed, no
//! copy sent; the copies sent, the log entry not) and after a commit landed, before its answer
//! (every store) — the server kills itself there, armed through `CHORUS_CRASH_AT`
//! (`chorus_bus::crash`), and the test checks that it died of that SIGKILL; then twice at
//! random moments with publishes in flight. Checked per message id: every acknowledged publish
//! is delivered and settled (none lost), none is delivered after its ack was answered 204, none
//! is acked twice, the publish stored before its answer was lost is a duplicate when retried
//! (none twice), and the inbox is empty at the end. On SQLite, and on NATS and Redis when
//! CHORUS_TEST_NATS_URL and CHORUS_TEST_REDIS_URL are set (then an unreachable server fails
//! the test).
//!
//! `CHORUS_CRASH_HANDOFFS` sets how many handoffs are sent in all per run (default 2,000 on
//! SQLite, 800 on NATS and Redis). The server runs in a child process: this test binary itself
//! (it has no libtest harness), which serves instead of testing when `CHORUS_CRASH_CHILD_STORE`
//! names the store.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chorus_server::{AgentEntry, ServerConfig, hash_token};
use common::{SseReader, child, client, delivered};
use serde_json::Value;
use tokio::sync::watch;

const AGENTS: usize = 8;
/// Streams reading the recipient's inbox at once (competing consumers of one pool), one run
/// each.
const POOLS: [usize; 3] = [1, 4, 16];

/// One way the server is killed.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// The server kills itself (SIGKILL) the `n`th time it reaches this step of a publish's
    /// commit (`chorus_bus::crash::points`): a kill point known to have been hit.
    At(&'static str, u64),
    /// SIGKILL from the test once this fraction of the publishes was acknowledged, at a moment
    /// publishes are in flight (their commits cut short or their answers lost).
    InFlight(f64),
}

/// The kills of one run on the store `name` after the first (between requests), in order: the
/// store's own commit steps, after a commit landed and before its answer (every store), then at
/// random moments.
fn kills(name: &str) -> Vec<Kill> {
    use chorus_bus::crash::points;
    let mut kills = match name {
        "SQLite" => vec![Kill::At(points::SQLITE_BEFORE_COMMIT, 20)],
        "NATS" => vec![
            Kill::At(points::NATS_CLAIMED, 20),
            Kill::At(points::NATS_COPIES_SENT, 20),
        ],
        _ => vec![],
    };
    kills.extend([
        Kill::At(points::STORED, 30),
        Kill::InFlight(0.45),
        Kill::InFlight(0.7),
    ]);
    kills
}

const SINK_TOKEN: &str = "sink-token";
const ADMIN_TOKEN: &str = "admin-token";
const CHILD_ENV: &str = "CHORUS_CRASH_CHILD_STORE";

/// Handoffs per agent: `CHORUS_CRASH_HANDOFFS` in all, else `default` in all.
fn per_agent(default: usize) -> usize {
    let total = std::env::var("CHORUS_CRASH_HANDOFFS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(default);
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
        admin_token_sha256: Some(hash_token(ADMIN_TOKEN)),
        rate_per_sec: 0.0,
        settle_rate_per_sec: 0.0,
        // Deliveries held by streams of a killed server come back after it.
        ack_wait_secs: 2,
        // Kill points and restarts may cost a message several attempts.
        max_deliver: 50,
        // The test's Redis keeps nothing on disk; what is killed here is chorus, not Redis.
        accept_volatile_store: true,
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
        Ok(store) => runtime.block_on(child_server(store)),
        Err(_) => runtime.block_on(every_store()),
    }
}

/// The server process: prints its address, then serves until killed.
async fn child_server(store: String) {
    child::serve(&store, &child_config(), false).await;
}

/// Starts the child server on the store at `store`; returns it and its base URL.
fn spawn_server(store: &str) -> (child::ServerProcess, String) {
    child::spawn_server(CHILD_ENV, store)
}

/// What the producers saw.
#[derive(Default)]
struct Published {
    /// Publishes answered 201 or 200, in all.
    acked: AtomicUsize,
    /// Publishes sent and not yet answered now.
    in_flight: AtomicUsize,
    /// Retried publishes answered 200 (duplicate): their first try was committed, its answer
    /// lost with the server.
    duplicates: AtomicUsize,
    /// Held shared for each publish request: the test takes it alone to kill the server
    /// between requests.
    gate: tokio::sync::RwLock<()>,
}

/// Publishes every message of `agent`, retrying through crashes; returns the acknowledged
/// ids and the latency of each acknowledged publish.
async fn producer(
    agent: usize,
    count: usize,
    base: watch::Receiver<String>,
    seen: Arc<Published>,
) -> (Vec<String>, Vec<Duration>) {
    let http = client();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seeds/003-python-valid-escalation.json"
    );
    let template: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (mut acked, mut latencies) = (Vec::new(), Vec::new());
    for i in 0..count {
        let (id, body) = handoff(&template, agent, i);
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut retried = false;
        loop {
            assert!(Instant::now() < deadline, "{id} was never accepted");
            let open = seen.gate.read().await;
            let url = format!("{}/v1/messages", base.borrow().clone());
            let started = Instant::now();
            seen.in_flight.fetch_add(1, Ordering::SeqCst);
            let sent = http
                .post(url)
                .bearer_auth(token(agent))
                .json(&body)
                .send()
                .await;
            seen.in_flight.fetch_sub(1, Ordering::SeqCst);
            drop(open);
            match sent {
                Ok(r) if r.status().is_success() => {
                    if r.status() == 200 {
                        assert!(retried, "{id}: a duplicate on its first try");
                        seen.duplicates.fetch_add(1, Ordering::SeqCst);
                    }
                    latencies.push(started.elapsed());
                    acked.push(id);
                    seen.acked.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Ok(r) => panic!("{id}: {}", r.status()),
                Err(_) => {
                    retried = true;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    (acked, latencies)
}

/// What the workers saw, per message id.
#[derive(Default)]
struct Consumed {
    /// Deliveries of each id (a redelivery after a lost ack or a killed server is allowed).
    deliveries: HashMap<String, usize>,
    /// Ids whose ack was answered 204, each once.
    acked: HashSet<String>,
    /// Ids whose ack was sent but whose answer was lost with a killed server: the ack may or
    /// may not have been committed (if not, the message comes again).
    unsure: HashSet<String>,
    /// Broken promises: an id delivered after its ack was answered 204, or acked twice.
    violations: Vec<String>,
}

/// One worker of the recipient's pool: reads the inbox stream and acks each delivery,
/// reconnecting to the current server whenever its stream breaks; stops when `done`.
async fn worker(
    base: watch::Receiver<String>,
    consumed: Arc<Mutex<Consumed>>,
    done: Arc<AtomicBool>,
) {
    let http = client();
    while !done.load(Ordering::Relaxed) {
        let at = base.borrow().clone();
        let Ok(mut inbox) =
            SseReader::try_open_url(&format!("{at}/v1/agents/sink/inbox"), SINK_TOKEN, None).await
        else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        while !done.load(Ordering::Relaxed) {
            let event = match inbox.try_next_within(Duration::from_millis(500)).await {
                Ok(Some(event)) => event,
                Ok(None) => continue,
                Err(_) => break,
            };
            let (id, attempt) = delivered(&event);
            {
                let mut c = consumed.lock().unwrap();
                *c.deliveries.entry(id.clone()).or_default() += 1;
                if c.acked.contains(&id) {
                    c.violations.push(format!(
                        "{id} delivered (attempt {attempt}) after its ack was answered 204"
                    ));
                }
            }
            let ack = http
                .post(format!(
                    "{at}/v1/agents/sink/inbox/{id}/ack?attempt={attempt}"
                ))
                .bearer_auth(SINK_TOKEN)
                .send()
                .await;
            match ack.map(|r| r.status().as_u16()) {
                Ok(204) => {
                    let mut c = consumed.lock().unwrap();
                    if !c.acked.insert(id.clone()) {
                        c.violations.push(format!("{id} acked twice with 204"));
                    }
                }
                // A redelivery replaced this attempt, or the delivery went with its server:
                // the message comes again.
                Ok(404 | 409) => {}
                Ok(other) => panic!("ack {id}: {other}"),
                Err(_) => {
                    consumed.lock().unwrap().unsure.insert(id);
                    break;
                }
            }
        }
    }
}

/// The recipient's backlog as `/metrics` reports it; none when the server does not answer.
async fn backlog(base: &str) -> Option<u64> {
    child::metric(base, ADMIN_TOKEN, r#"chorus_inbox_backlog{inbox="sink"}"#).await
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The scenario on SQLite (2,000 handoffs a run), and on NATS and Redis (800) when their
/// variables are set, once for each pool size; a store whose variable is not set is said to be
/// not tested.
async fn every_store() {
    for workers in POOLS {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = format!("sqlite:{}", dir.path().join("chorus.db").display());
        kill_repeatedly("SQLite", &sqlite, per_agent(2_000), workers).await;
    }
    for (name, var) in common::SERVER_STORES {
        let Some(url) = common::server_url("the crash test", name, var) else {
            continue;
        };
        for workers in POOLS {
            let address = common::fresh_namespace(&url);
            kill_repeatedly(name, &address, per_agent(800), workers).await;
            common::destroy_namespace(&address).await;
        }
    }
}

/// Starts the server on `store`, armed to kill itself at `next` when that is a kill point.
fn start(store: &str, next: Option<&Kill>) -> (child::ServerProcess, String) {
    match next {
        Some(Kill::At(point, n)) => child::spawn_server_with(
            CHILD_ENV,
            store,
            &[(chorus_bus::crash::CRASH_AT_VAR, format!("{point}:{n}"))],
            None,
        ),
        _ => spawn_server(store),
    }
}

/// A worker of the pool that takes three messages, never settles them and is killed while it
/// holds them (its stream cut as by `kill -9`); returns how many it held.
async fn doomed_worker(base: &str) -> usize {
    let held = Arc::new(AtomicUsize::new(0));
    let url = format!("{base}/v1/agents/sink/inbox?max_in_flight=3");
    let mut inbox = SseReader::try_open_url(&url, SINK_TOKEN, None)
        .await
        .expect("the doomed worker's stream");
    let task = {
        let held = held.clone();
        tokio::spawn(async move {
            while let Ok(Some(_)) = inbox.try_next_within(Duration::from_secs(30)).await {
                held.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while held.load(Ordering::SeqCst) < 3 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    task.abort();
    let _ = task.await;
    held.load(Ordering::SeqCst)
}

/// Under a load of handoffs to a pool of `workers` streams: kills one more worker while it holds
/// messages, then the server between requests, at each kill point of the store's commit, and
/// twice at random moments, restarting it on `store` each time; checks that every acknowledged
/// publish is delivered and settled, none after its ack, and that the kill after a commit
/// made its retry a duplicate.
async fn kill_repeatedly(name: &str, store: &str, per_agent: usize, workers: usize) {
    let plan = kills(name);
    let (mut child, first) = spawn_server(store);
    let (set_base, base) = watch::channel(first.clone());
    let published = Arc::new(Published::default());
    let consumed = Arc::new(Mutex::new(Consumed::default()));
    let done = Arc::new(AtomicBool::new(false));
    let producers: Vec<_> = (0..AGENTS)
        .map(|a| tokio::spawn(producer(a, per_agent, base.clone(), published.clone())))
        .collect();
    let pool: Vec<_> = (0..workers)
        .map(|_| tokio::spawn(worker(base.clone(), consumed.clone(), done.clone())))
        .collect();
    let held = doomed_worker(&first).await;
    assert_eq!(held, 3, "the killed worker held three messages");

    let total = AGENTS * per_agent;
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut kills = Vec::new();
    // Between requests: no publish in flight, none sent until the server is back (armed for
    // the first kill point).
    {
        let _closed = published.gate.write().await;
        assert_eq!(published.in_flight.load(Ordering::SeqCst), 0);
        drop(child); // SIGKILL
        kills.push(format!(
            "between requests after {}",
            published.acked.load(Ordering::Relaxed)
        ));
        let (next, url) = start(store, plan.first());
        child = next;
        set_base.send(url).unwrap();
    }
    for (i, kill) in plan.iter().enumerate() {
        let duplicates_before = published.duplicates.load(Ordering::SeqCst);
        match *kill {
            Kill::At(point, _) => {
                // The server kills itself there; nothing else kills it.
                let status = loop {
                    if let Some(status) = child.0.try_wait().expect("the server's status") {
                        break status;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "the server never reached {point}"
                    );
                    tokio::time::sleep(Duration::from_millis(5)).await;
                };
                use std::os::unix::process::ExitStatusExt;
                assert_eq!(status.signal(), Some(9), "the server was killed at {point}");
                kills.push(format!(
                    "at {point} after {}",
                    published.acked.load(Ordering::Relaxed)
                ));
            }
            Kill::InFlight(fraction) => {
                let at = (total as f64 * fraction) as usize;
                while published.acked.load(Ordering::Relaxed) < at
                    || published.in_flight.load(Ordering::SeqCst) == 0
                {
                    assert!(Instant::now() < deadline, "the load did not go on");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let in_flight = published.in_flight.load(Ordering::SeqCst);
                drop(child); // SIGKILL
                kills.push(format!(
                    "{in_flight} publishes in flight after {}",
                    published.acked.load(Ordering::Relaxed)
                ));
            }
        }
        let (next, url) = start(store, plan.get(i + 1));
        child = next;
        set_base.send(url).unwrap();
        if matches!(kill, Kill::At(point, _) if *point == chorus_bus::crash::points::STORED) {
            // The publish stored before the kill is retried: answered "duplicate", stored once.
            let waited = Instant::now();
            while published.duplicates.load(Ordering::SeqCst) == duplicates_before {
                assert!(
                    waited.elapsed() < Duration::from_secs(30),
                    "the retry of the publish stored before the kill at {} answered duplicate",
                    chorus_bus::crash::points::STORED
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }

    let mut acked = HashSet::new();
    let mut latencies = Vec::new();
    for p in producers {
        let (ids, times) = p.await.unwrap();
        acked.extend(ids);
        latencies.extend(times);
    }
    assert_eq!(acked.len(), total);

    // Done when every message was delivered and its ack answered (or cut by a kill), and the
    // inbox is empty: no message is left unsettled.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let settled = {
            let c = consumed.lock().unwrap();
            acked
                .iter()
                .filter(|id| c.acked.contains(*id) || c.unsure.contains(*id))
                .count()
        };
        let current = base.borrow().clone();
        if settled >= total && backlog(&current).await == Some(0) {
            break;
        }
        if Instant::now() >= deadline {
            let c = consumed.lock().unwrap();
            let missing: Vec<(&String, usize)> = acked
                .iter()
                .filter(|id| !c.acked.contains(*id) && !c.unsure.contains(*id))
                .map(|id| (id, c.deliveries.get(id).copied().unwrap_or(0)))
                .collect();
            panic!(
                "{} acknowledged publishes were not delivered and acked (id, deliveries): {missing:?}; kills {kills:?}",
                total - settled
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A moment more: a message delivered again after its ack would show now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    done.store(true, Ordering::Relaxed);
    for w in pool {
        w.await.unwrap();
    }
    drop(child);

    let consumed = consumed.lock().unwrap();
    assert!(consumed.violations.is_empty(), "{:#?}", consumed.violations);
    let delivered: HashSet<String> = consumed.deliveries.keys().cloned().collect();
    assert_eq!(
        delivered, acked,
        "each acknowledged publish delivered, and nothing else"
    );
    // An ack whose answer was lost, of a message that never came again, was committed.
    assert!(
        acked
            .difference(&consumed.acked)
            .all(|id| consumed.unsure.contains(id)),
        "every message not acked with 204 had an ack cut by a kill"
    );
    let unsure_only = acked.difference(&consumed.acked).count();
    let redelivered = consumed.deliveries.values().filter(|n| **n > 1).count();
    let duplicates = published.duplicates.load(Ordering::Relaxed);
    latencies.sort();
    println!(
        "{name}: {total} handoffs from {AGENTS} agents to a pool of {workers} workers (and one more killed holding 3); server killed {} times ({kills:?}); retried publishes answered duplicate: {duplicates}; every message delivered and settled, inbox empty (redelivered after a kill or lost ack: {redelivered}, none after a 204 ack; acks committed whose answer the kill cut: {unsure_only}); publish latency p50 {:?}, p99 {:?}",
        kills.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
}
