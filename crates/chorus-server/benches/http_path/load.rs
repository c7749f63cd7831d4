//! The load of the HTTP path bench: a server on 127.0.0.1 and its publishers; what every
//! run shares (the agents, the messages, the clock, the report).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chorus_server::{AgentEntry, Server, ServerConfig, Store, bind, hash_token};
use tokio::sync::oneshot;

use crate::publisher::{Client, Publisher};
use crate::reader::{Consumed, Reader};

/// Publishing tasks (one agent identity and one keep-alive connection each).
pub const PUBLISHERS: usize = 64;
/// Consuming agents (one inbox stream each).
pub const AGENTS: usize = 8;
/// Size of each message's JSON, bytes.
const SIZE: usize = 1024;
/// Unsettled deliveries an inbox stream may hold.
const MAX_IN_FLIGHT: usize = 256;
/// The longest the bench waits for any one thing.
pub const PATIENCE: Duration = Duration::from_secs(60);
/// How messages are published.
#[derive(Debug, Clone, Copy)]
pub enum Publish {
    /// `POST /v1/messages`, one message a request.
    Single,
    /// `POST /v1/messages/batch` with this many messages a request.
    Batch(usize),
}

/// How deliveries are acknowledged.
#[derive(Debug, Clone, Copy)]
pub enum Ack {
    /// `POST /v1/agents/{agent}/inbox/{id}/ack` for each, concurrently.
    Single,
    /// `POST /v1/agents/{agent}/inbox/ack` with every delivery received since the last one.
    Batch,
}

/// Where the clients (publishers, stream readers, ackers) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clients {
    /// On a runtime of their own, as a separate program's would: they share the machine's
    /// cores with the server, not its scheduler.
    Own,
    /// On the server's runtime (the layout of the bench before 2026-11-29).
    Server,
}

/// One row's way of loading the server.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub publish: Publish,
    pub ack: Ack,
    /// Messages a second in all, spread over the publishers; none: as fast as answered.
    pub pace: Option<f64>,
    /// What the publishers send their requests with.
    pub client: Client,
    /// Where the clients' tasks run.
    pub clients: Clients,
    /// The server on the in-memory store (a store that costs almost nothing: what the HTTP
    /// path alone allows) instead of a fresh SQLite file.
    pub memory: bool,
}

/// What one run measured; latencies in milliseconds (p50, p99).
#[derive(Debug, Clone)]
pub struct Report {
    /// Messages acknowledged per second, from the first publish to the last ack answered.
    pub msgs_per_s: f64,
    /// That time.
    pub flow: Duration,
    /// Publish request sent (or due, when paced) to answered.
    pub publish: (f64, f64),
    /// Publish sent (or due) to the delivery read by the consumer.
    pub deliver: (f64, f64),
    /// Delivery read to its ack answered.
    pub ack: (f64, f64),
    /// The pace asked for (0: none).
    pub paced_at: f64,
}

pub fn agent(j: usize) -> String {
    format!("agent-{j}")
}

pub fn sender(p: usize) -> String {
    format!("sender-{p:02}")
}

pub fn token(id: &str) -> String {
    format!("{id}-token")
}

/// The agents of the run with their tokens, no rate limits.
pub fn config() -> ServerConfig {
    let mut c = ServerConfig {
        admin_token_sha256: Some(hash_token("admin-token")),
        rate_per_sec: 0.0,
        settle_rate_per_sec: 0.0,
        ..ServerConfig::default()
    };
    for id in (0..AGENTS).map(agent).chain((0..PUBLISHERS).map(sender)) {
        let entry = AgentEntry::with_token_hash(hash_token(&token(&id)));
        c.agents.insert(id, entry);
    }
    c
}

/// Message `i`'s recipient: every publisher writes to every agent in turn.
fn recipient(i: usize) -> usize {
    (i / PUBLISHERS + i) % AGENTS
}

/// Message `i` of run `run`: from its publisher to its recipient, `SIZE` bytes of JSON.
pub fn message(run: &str, i: usize) -> String {
    let mut s = format!(
        r#"{{"role":"user","id":"{run}-{i}","name":"{}","recipient":"{}","content":""#,
        sender(i % PUBLISHERS),
        agent(recipient(i))
    );
    let fill = SIZE.saturating_sub(s.len() + 2);
    s.push_str(&"x".repeat(fill));
    s.push_str("\"}");
    s
}

/// The index of a message of this bench from its id.
pub fn index(id: &str) -> usize {
    id.rsplit('-')
        .next()
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("not a message of this bench: {id:?}"))
}

/// The clock of one run: when each message was published, and how often it was delivered.
pub struct Clock {
    pub start: Instant,
    pub sent_at: Vec<AtomicU64>,
    seen: Vec<AtomicU8>,
}

impl Clock {
    pub fn new(n: usize) -> Arc<Clock> {
        Arc::new(Clock {
            start: Instant::now(),
            sent_at: (0..n).map(|_| AtomicU64::new(0)).collect(),
            seen: (0..n).map(|_| AtomicU8::new(0)).collect(),
        })
    }

    /// Microseconds since the run started.
    pub fn now(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Counts a delivery of message `i` read at `now`; its latency when it is the first.
    pub fn delivered(&self, i: usize, now: u64) -> Option<u64> {
        let first = self.seen[i].fetch_add(1, Ordering::Relaxed) == 0;
        first.then(|| now.saturating_sub(self.sent_at[i].load(Ordering::Relaxed)))
    }

    fn duplicates(&self) -> usize {
        self.seen
            .iter()
            .map(|s| usize::from(s.load(Ordering::Relaxed)).saturating_sub(1))
            .sum()
    }
}

/// p50 and p99 of microsecond samples, in milliseconds.
pub fn percentiles(mut v: Vec<u64>) -> (f64, f64) {
    v.sort_unstable();
    let pick = |q: f64| {
        let i = ((v.len().max(1) - 1) as f64 * q).round() as usize;
        v.get(i).map_or(f64::NAN, |&us| us as f64 / 1000.0)
    };
    (pick(0.50), pick(0.99))
}

pub fn run_id() -> String {
    format!("r{}", chorus_bus::now_ms())
}

/// Messages each agent is sent in a run of `n`.
pub fn expected(n: usize) -> Vec<usize> {
    let mut counts = vec![0; AGENTS];
    for i in 0..n {
        counts[recipient(i)] += 1;
    }
    counts
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(PATIENCE)
        .pool_max_idle_per_host(PUBLISHERS)
        .build()
        .expect("HTTP client")
}

/// Runs `n` messages through a fresh server as `plan` says.
pub async fn http_run(plan: &Plan, n: usize) -> Report {
    let dir = tempfile::tempdir().expect("temporary folder");
    let config = config();
    let store = if plan.memory {
        Store::memory()
    } else {
        Store::sqlite(dir.path().join("chorus.db"))
    };
    let bus = store.open(&config).await.expect("open the store");
    let side = store.open_side(&config).expect("open the stores beside");
    let (listener, addr) = bind("127.0.0.1:0").await.expect("bind");
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(
        Server::with_side(bus, side, &config).serve(listener, async move {
            let _ = stopped.await;
        }),
    );
    let clients = clients_run(*plan, n, addr);
    let report = match plan.clients {
        Clients::Own => match client_runtime().spawn(clients).await {
            Ok(report) => report,
            // A client's assertion failed: fail with its message, not the join error's.
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        },
        Clients::Server => clients.await,
    };
    let _ = stop.send(());
    tokio::time::timeout(PATIENCE, server)
        .await
        .expect("the server stops")
        .expect("server task")
        .expect("server ran");
    report
}

/// The clients' own runtime (`CHORUS_BENCH_CLIENT_WORKERS` workers, 2 unless set), made once
/// and kept for every run.
pub fn client_runtime() -> tokio::runtime::Handle {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(crate::env("CHORUS_BENCH_CLIENT_WORKERS", 2))
            .thread_name("bench-client")
            .enable_all()
            .build()
            .expect("the clients' runtime")
    })
    .handle()
    .clone()
}

/// The publishers and the consumers of one run against the server at `addr`; what they measured.
pub async fn clients_run(plan: Plan, n: usize, addr: std::net::SocketAddr) -> Report {
    let base = format!("http://{addr}");
    // The streams and the publishers' connections are opened before the clock starts.
    let mut readers = Vec::new();
    for j in 0..AGENTS {
        let client = client();
        let url = format!(
            "{base}/v1/agents/{}/inbox?max_in_flight={MAX_IN_FLIGHT}",
            agent(j)
        );
        let response = client
            .get(url)
            .bearer_auth(token(&agent(j)))
            .send()
            .await
            .expect("inbox request");
        assert_eq!(response.status(), 200);
        readers.push((client, response));
    }
    let shared = client();
    if plan.client == Client::Reqwest {
        let warm = (0..PUBLISHERS).map(|_| shared.get(format!("{base}/healthz")).send());
        for r in futures::future::join_all(warm).await {
            assert_eq!(r.expect("healthz").status(), 200);
        }
    }
    let mut publishers = Vec::with_capacity(PUBLISHERS);
    for _ in 0..PUBLISHERS {
        publishers.push(Publisher::open(plan.client, addr, &shared).await);
    }
    // Each consumer's batch acks go over a connection of the same kind as the publishers'.
    let mut ackers = Vec::with_capacity(AGENTS);
    for _ in 0..AGENTS {
        ackers.push(Publisher::open(plan.client, addr, &shared).await);
    }
    let (run, clock) = (run_id(), Clock::new(n));
    let consumers: Vec<_> = readers
        .into_iter()
        .zip(expected(n))
        .zip(ackers)
        .enumerate()
        .map(|(j, (((client, response), expect), batch_acks))| {
            let reader = Reader {
                client,
                batch_acks,
                base: base.clone(),
                agent: agent(j),
                ack: plan.ack,
                clock: clock.clone(),
            };
            tokio::spawn(reader.consume(response, expect))
        })
        .collect();
    let publishers: Vec<_> = publishers
        .into_iter()
        .enumerate()
        .map(|(p, mut publisher)| {
            let (run, clock, plan) = (run.clone(), clock.clone(), plan);
            tokio::spawn(async move { publish_all(&mut publisher, &run, p, n, plan, &clock).await })
        })
        .collect();
    gather(n, &clock, publishers, consumers, plan.pace).await
}

/// Waits for the tasks of a run and sums up.
pub async fn gather(
    n: usize,
    clock: &Clock,
    publishers: Vec<tokio::task::JoinHandle<Vec<u64>>>,
    consumers: Vec<tokio::task::JoinHandle<Consumed>>,
    pace: Option<f64>,
) -> Report {
    let mut publish = Vec::with_capacity(n);
    for p in publishers {
        publish.extend(p.await.expect("a publisher"));
    }
    let (mut deliver, mut ack, mut last) = (Vec::with_capacity(n), Vec::with_capacity(n), 0);
    for c in consumers {
        let c = c.await.expect("a consumer");
        deliver.extend(c.deliver);
        ack.extend(c.acks);
        last = last.max(c.last);
    }
    assert_eq!(
        (deliver.len(), ack.len()),
        (n, n),
        "every message delivered and acked"
    );
    assert_eq!(clock.duplicates(), 0, "no message delivered twice");
    let flow = Duration::from_micros(last.max(1));
    Report {
        msgs_per_s: n as f64 / flow.as_secs_f64(),
        flow,
        publish: percentiles(publish),
        deliver: percentiles(deliver),
        ack: percentiles(ack),
        paced_at: pace.unwrap_or(0.0),
    }
}

/// Publishes publisher `p`'s share of the `n` messages; returns each message's publish latency.
async fn publish_all(
    publisher: &mut Publisher,
    run: &str,
    p: usize,
    n: usize,
    plan: Plan,
    clock: &Clock,
) -> Vec<u64> {
    let bearer = token(&sender(p));
    let mine: Vec<usize> = (p..n).step_by(PUBLISHERS).collect();
    let per_request = match plan.publish {
        Publish::Single => 1,
        Publish::Batch(k) => k.max(1),
    };
    let mut latencies = Vec::with_capacity(mine.len());
    for (k, group) in mine.chunks(per_request).enumerate() {
        // Paced: the requests are due one after the other at even intervals (request k of
        // publisher p is request k * PUBLISHERS + p of the run), and a request's latency counts
        // from when it was due (a publisher held up by a slow answer does not hide the wait).
        let due = plan.pace.map(|rate| {
            let before = (k * PUBLISHERS + p) * per_request;
            (before as f64 / rate * 1e6) as u64
        });
        if let Some(due) = due {
            tokio::time::sleep_until((clock.start + Duration::from_micros(due)).into()).await;
        }
        let began = due.unwrap_or_else(|| clock.now());
        for &i in group {
            clock.sent_at[i].store(began, Ordering::Relaxed);
        }
        let (path, body) = match plan.publish {
            Publish::Single => ("/v1/messages", message(run, group[0])),
            Publish::Batch(_) => {
                let items: Vec<String> = group.iter().map(|&i| message(run, i)).collect();
                ("/v1/messages/batch", format!("[{}]", items.join(",")))
            }
        };
        let (status, answer) = publisher.post(path, &bearer, body).await;
        match plan.publish {
            Publish::Single => assert_eq!(status, 201, "{answer}"),
            Publish::Batch(_) => {
                assert_eq!(status, 200, "{answer}");
                let results = answer["results"].as_array().expect("results");
                assert!(results.iter().all(|r| r["status"] == 201), "{answer}");
            }
        }
        let took = clock.now().saturating_sub(began);
        latencies.extend(std::iter::repeat_n(took, group.len()));
    }
    latencies
}
