//! Agent pools over real HTTP: several workers read one pool inbox, and each message is handled
//! by exactly one of them; a worker that goes away hands its messages back at once; a stream
//! holds at most `max_in_flight` unsettled deliveries (and, as the last stream of its inbox on
//! its server, gives them back to the store for the streams of other servers); a handler slower than the ack wait keeps
//! its delivery with `in-progress` and is never given a message twice.
//!
//! On SQLite always; on NATS JetStream and Redis when CHORUS_TEST_NATS_URL / CHORUS_TEST_REDIS_URL
//! are set (and then an unreachable server fails the test).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use tokio::sync::mpsc;

/// One message a worker handled: who, which message, which attempt.
#[derive(Debug)]
struct Handled {
    worker: usize,
    id: String,
    attempt: u64,
}

/// How a worker behaves.
#[derive(Clone, Copy)]
struct Work {
    /// Time spent on each message before the ack.
    takes: Duration,
    /// Every this long while working, the worker says `in-progress`.
    heartbeat: Option<Duration>,
    /// `max_in_flight` of the worker's stream.
    max_in_flight: usize,
}

/// A worker: reads the pool inbox as bob, works on each message, acks it, reports it.
fn worker(
    server: Arc<TestServer>,
    n: usize,
    work: Work,
    done: mpsc::UnboundedSender<Handled>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let query = format!("max_in_flight={}", work.max_in_flight);
        let mut inbox = SseReader::open_with(&server, "pool", BOB, &query).await;
        while let Some(event) = inbox.next_within(Duration::from_secs(60)).await {
            let (id, attempt) = delivered(&event);
            let mut left = work.takes;
            while !left.is_zero() {
                let step = work.heartbeat.unwrap_or(left).min(left);
                tokio::time::sleep(step).await;
                left -= step;
                if work.heartbeat.is_some() && !left.is_zero() {
                    assert_eq!(
                        settle(&server, "pool", BOB, &id, "in-progress").await,
                        204,
                        "worker {n}: in-progress for {id}"
                    );
                }
            }
            let status = settle(&server, "pool", BOB, &id, "ack").await;
            assert_eq!(status, 204, "worker {n}: ack of {id} attempt {attempt}");
            if done
                .send(Handled {
                    worker: n,
                    id,
                    attempt,
                })
                .is_err()
            {
                return;
            }
        }
    })
}

fn pool_config(ack_wait_secs: u64) -> chorus_server::ServerConfig {
    let mut c = config(ack_wait_secs);
    c.agents.get_mut("bob").unwrap().read = vec!["pool".into()];
    c.rate_per_sec = 0.0;
    c
}

/// Publishes `count` messages from alice to the pool; returns their ids.
async fn publish_to_pool(server: &TestServer, prefix: &str, count: usize) -> Vec<String> {
    let mut ids = Vec::with_capacity(count);
    for i in 0..count {
        let id = format!("{prefix}-{i}");
        let r = publish(server, ALICE, &message(&id, "alice", "pool", "work")).await;
        assert_eq!(r.status(), 201, "publish {id}");
        ids.push(id);
    }
    ids
}

/// Collects reports until every id in `ids` was handled (or the patience runs out), then checks
/// that each was handled exactly once; returns how many each worker handled.
async fn handled_once(
    reports: &mut mpsc::UnboundedReceiver<Handled>,
    ids: &[String],
    patience: Duration,
) -> BTreeMap<usize, usize> {
    let mut seen: BTreeMap<String, Vec<(usize, u64)>> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + patience;
    while seen.len() < ids.len() {
        match tokio::time::timeout_at(deadline, reports.recv()).await {
            Ok(Some(h)) => seen.entry(h.id).or_default().push((h.worker, h.attempt)),
            _ => break,
        }
    }
    // Anything handled twice would arrive shortly after the last first handling.
    while let Ok(Some(h)) = tokio::time::timeout(Duration::from_millis(300), reports.recv()).await {
        seen.entry(h.id).or_default().push((h.worker, h.attempt));
    }
    let missing: Vec<&String> = ids.iter().filter(|id| !seen.contains_key(*id)).collect();
    assert!(missing.is_empty(), "never handled: {missing:?}");
    let twice: Vec<_> = seen.iter().filter(|(_, h)| h.len() > 1).collect();
    assert!(twice.is_empty(), "handled more than once: {twice:?}");
    let mut per_worker = BTreeMap::new();
    for handlings in seen.values() {
        *per_worker.entry(handlings[0].0).or_insert(0) += 1;
    }
    per_worker
}

/// `workers` workers share the pool; one of them is killed while it holds messages; every
/// message is handled once and no message is delivered twice by the store.
async fn competing_workers(
    server: Arc<TestServer>,
    bus_delivered: impl AsyncFn() -> f64,
    workers: usize,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = Work {
        takes: Duration::from_millis(20),
        heartbeat: None,
        max_in_flight: 4,
    };
    // A worker that takes messages and never settles them, killed while it holds them: alone
    // on the pool for the first three messages, so that it surely holds some.
    let held = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let doomed = {
        let (server, held) = (server.clone(), held.clone());
        tokio::spawn(async move {
            let mut inbox = SseReader::open_with(&server, "pool", BOB, "max_in_flight=3").await;
            loop {
                let _ = inbox.next().await;
                held.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        })
    };
    let prefix = format!("w{workers}");
    let mut ids = publish_to_pool(&server, &format!("{prefix}-first"), 3).await;
    let waited = std::time::Instant::now();
    while held.load(std::sync::atomic::Ordering::SeqCst) < 3 && waited.elapsed() < PATIENCE {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut tasks: Vec<_> = (0..workers)
        .map(|n| worker(server.clone(), n, work, tx.clone()))
        .collect();
    ids.extend(publish_to_pool(&server, &prefix, 57).await);
    doomed.abort();
    assert_eq!(
        held.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "the killed worker held the first three messages when it was killed"
    );
    let per_worker = handled_once(&mut rx, &ids, Duration::from_secs(30)).await;
    eprintln!("{workers} workers: handled per worker {per_worker:?}");
    if workers > 1 {
        assert!(per_worker.len() > 1, "the work was shared: {per_worker:?}");
    }
    assert_eq!(
        bus_delivered().await,
        60.0,
        "the store delivered each message once (the killed worker's were handed back, not redelivered)"
    );
    for t in tasks.drain(..) {
        t.abort();
    }
}

async fn delivered_metric(server: &TestServer) -> f64 {
    let text = metrics_text(server).await;
    text.lines()
        .find_map(|l| l.strip_prefix("chorus_delivered_total ")?.parse().ok())
        .unwrap_or_else(|| panic!("no chorus_delivered_total in\n{text}"))
}

async fn sqlite_server(ack_wait_secs: u64) -> (tempfile::TempDir, Arc<TestServer>) {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &pool_config(ack_wait_secs)).await;
    (dir, Arc::new(server))
}

/// What a stream of the pool on `one` held and did not settle goes, when it closes, to a stream
/// of the pool on `other` (the same server, or another on the same store) within `within`, well
/// before the 30 s ack wait would have given it back, each message as its attempt `attempt`.
async fn hands_back(
    (one, other): (&TestServer, &TestServer),
    prefix: &str,
    within: Duration,
    attempt: u64,
) {
    publish_to_pool(one, prefix, 3).await;
    let mut first = SseReader::open_with(one, "pool", BOB, "max_in_flight=3").await;
    for _ in 0..3 {
        first.next().await;
    }
    let mut second = SseReader::open_with(other, "pool", BOB, "max_in_flight=3").await;
    assert!(
        second
            .next_within(Duration::from_millis(300))
            .await
            .is_none(),
        "held by the first stream"
    );
    drop(first);
    let started = std::time::Instant::now();
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(delivered(&second.next().await));
    }
    assert!(
        started.elapsed() < within,
        "handed back at once, not after the 30 s ack wait: {:?}",
        started.elapsed()
    );
    got.sort();
    let want: Vec<(String, u64)> = (0..3).map(|i| (format!("{prefix}-{i}"), attempt)).collect();
    assert_eq!(got, want);
}

/// Two servers on one store: the last stream of the pool on `one` gives what it held back to
/// the store when it closes, and the stream on `other` gets it, each as its second attempt.
async fn hands_back_to_another_server(one: &TestServer, other: &TestServer, prefix: &str) {
    hands_back((one, other), prefix, Duration::from_secs(10), 2).await;
}

#[tokio::test]
async fn a_closed_stream_hands_its_messages_to_another_server_on_the_same_store() {
    let dir = tempfile::tempdir().expect("temporary folder");
    let one = TestServer::start(&db(dir.path()), &pool_config(30)).await;
    let other = TestServer::start(&db(dir.path()), &pool_config(30)).await;
    hands_back_to_another_server(&one, &other, "x").await;
}

/// Opens the pool's inbox as bob with `max_in_flight`, resuming after `last_event_id`.
async fn open_pool(server: &TestServer, max_in_flight: usize, last_event_id: &str) -> SseReader {
    let url = server.url(&format!(
        "/v1/agents/pool/inbox?max_in_flight={max_in_flight}"
    ));
    SseReader::try_open_url(&url, BOB, Some(last_event_id))
        .await
        .expect("inbox stream")
}

/// A worker that reconnects with `Last-Event-ID` keeps what it had already received (not sent
/// again, counted against its `max_in_flight`), and still takes what another worker of the pool
/// hands back, whatever the event numbers: before, a resumed stream skipped every handed-back
/// delivery numbered up to its `Last-Event-ID` (those waited for the ack wait), and did not count
/// what its client held.
#[tokio::test]
async fn a_resumed_stream_keeps_what_it_read_and_takes_what_others_hand_back() {
    let (_dir, server) = sqlite_server(30).await;
    resumed_stream(&server).await;
}

/// [`a_resumed_stream_keeps_what_it_read_and_takes_what_others_hand_back`] on `server`.
async fn resumed_stream(server: &TestServer) {
    publish_to_pool(server, "early", 1).await;
    let mut other = SseReader::open_with(server, "pool", BOB, "max_in_flight=1").await;
    assert_eq!(delivered(&other.next().await).0, "early-0");
    publish_to_pool(server, "mine", 1).await;
    let mut mine = SseReader::open_with(server, "pool", BOB, "max_in_flight=1").await;
    let read = mine.next().await;
    assert_eq!(delivered(&read).0, "mine-0");
    drop(mine);
    // Left in the store: both streams of the pool are full.
    publish_to_pool(server, "queued", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let last = read.id.expect("events carry ids");
    let mut resumed = open_pool(server, 1, &last).await;
    resumed
        .assert_quiet(
            Duration::from_millis(500),
            "mine-0 sent again, or queued-0 beyond max_in_flight=1 while the client holds mine-0",
        )
        .await;
    assert_eq!(settle(server, "pool", BOB, "mine-0", "ack").await, 204);
    assert_eq!(delivered(&resumed.next().await), ("queued-0".into(), 1));
    // The other worker goes away: what it held, numbered before the resumed stream's
    // Last-Event-ID, goes to the resumed stream once it has room (the ack wait is 30 s).
    drop(other);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(settle(server, "pool", BOB, "queued-0", "ack").await, 204);
    let handed = resumed
        .next_within(Duration::from_secs(5))
        .await
        .expect("the other worker's message handed back to the resumed stream");
    assert_eq!(delivered(&handed), ("early-0".into(), 1));
    assert_eq!(settle(server, "pool", BOB, "early-0", "ack").await, 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_message_of_a_pool_goes_to_one_worker_on_sqlite() {
    for workers in [1, 4, 16] {
        let (_dir, server) = sqlite_server(30).await;
        let metrics = server.clone();
        competing_workers(server, async || delivered_metric(&metrics).await, workers).await;
    }
}

#[tokio::test]
async fn a_stream_holds_at_most_max_in_flight() {
    let (_dir, server) = sqlite_server(30).await;
    publish_to_pool(&server, "f", 5).await;
    let mut inbox = SseReader::open_with(&server, "pool", BOB, "max_in_flight=2").await;
    let first = delivered(&inbox.next().await).0;
    let _second = delivered(&inbox.next().await).0;
    inbox
        .assert_quiet(
            Duration::from_millis(500),
            "a third delivery while two are held",
        )
        .await;
    // Another stream of the pool takes the rest meanwhile.
    let mut other = SseReader::open_with(&server, "pool", BOB, "max_in_flight=1").await;
    assert_eq!(delivered(&other.next().await).0, "f-2");
    assert_eq!(settle(&server, "pool", BOB, &first, "ack").await, 204);
    assert_eq!(delivered(&inbox.next().await).0, "f-3");
    for bad in [
        "max_in_flight=0",
        "max_in_flight=1001",
        "max_in_flight=x",
        "other=1",
    ] {
        let r = client()
            .get(server.url(&format!("/v1/agents/pool/inbox?{bad}")))
            .bearer_auth(BOB)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{bad}");
    }
}

/// A stream at its `max_in_flight` whose delivery's lease ends (the ack wait passed with no
/// settle) gets that message again as soon as the store gives it again: its room is counted
/// again when the lease ends, not at the stream's next periodic look (5 s).
#[tokio::test]
async fn a_full_stream_gets_a_delivery_again_when_its_lease_ends() {
    let (_dir, server) = sqlite_server(1).await;
    lease_ends(&server).await;
}

/// [`a_full_stream_gets_a_delivery_again_when_its_lease_ends`] on a server with an ack wait of
/// 1 s.
async fn lease_ends(server: &TestServer) {
    publish_to_pool(server, "lease", 1).await;
    let mut inbox = SseReader::open_with(server, "pool", BOB, "max_in_flight=1").await;
    assert_eq!(delivered(&inbox.next().await), ("lease-0".into(), 1));
    let read = std::time::Instant::now();
    let again = inbox
        .next_within(Duration::from_secs(10))
        .await
        .expect("delivered again after the ack wait");
    let after = read.elapsed();
    assert_eq!(delivered(&again), ("lease-0".into(), 2));
    assert!(
        after < Duration::from_millis(2500),
        "delivered again {after:?} after the first delivery, with an ack wait of 1 s"
    );
    assert_eq!(settle(server, "pool", BOB, "lease-0", "ack").await, 204);
}

#[tokio::test]
async fn a_closed_stream_hands_its_messages_back_at_once() {
    let (_dir, server) = sqlite_server(30).await;
    // Another stream of the same server takes them as they were (the same attempt).
    hands_back((&server, &server), "h", Duration::from_secs(5), 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_handlers_that_say_in_progress_get_each_message_once() {
    let (_dir, server) = sqlite_server(1).await;
    slow_handlers(server).await;
}

/// 16 workers whose handlers take 1.2 s a message, against an ack wait of 1 s (the server's
/// config), saying in-progress every 300 ms: 150 messages, each handled and delivered once.
async fn slow_handlers(server: Arc<TestServer>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let work = Work {
        takes: Duration::from_millis(1200),
        heartbeat: Some(Duration::from_millis(300)),
        max_in_flight: 1,
    };
    let tasks: Vec<_> = (0..16)
        .map(|n| worker(server.clone(), n, work, tx.clone()))
        .collect();
    let ids = publish_to_pool(&server, "slow", 150).await;
    handled_once(&mut rx, &ids, Duration::from_secs(60)).await;
    assert_eq!(
        delivered_metric(&server).await,
        150.0,
        "no redelivery although every handler outlived the ack wait"
    );
    for t in tasks {
        t.abort();
    }
}

#[tokio::test]
async fn an_ack_of_an_older_attempt_leaves_the_newer_delivery_alone() {
    let (_dir, server) = sqlite_server(1).await;
    publish_to_pool(&server, "old", 1).await;
    let mut inbox = SseReader::open_with(&server, "pool", BOB, "max_in_flight=1").await;
    assert_eq!(delivered(&inbox.next().await), ("old-0".into(), 1));
    // No ack within the 1 s ack wait: delivered again.
    drop(inbox);
    let mut inbox = SseReader::open_with(&server, "pool", BOB, "max_in_flight=2").await;
    let mut attempt = 1;
    while attempt == 1 {
        attempt = delivered(&inbox.next().await).1;
    }
    let path = |a: u64| format!("/v1/agents/pool/inbox/old-0/ack?attempt={a}");
    let stale = client()
        .post(server.url(&path(1)))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 409, "{}", stale.text().await.unwrap());
    let current = client()
        .post(server.url(&path(attempt)))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(current.status(), 204);
}

#[cfg(any(feature = "nats", feature = "redis"))]
async fn on_store(backend: &str, var: &str) {
    let Some(url) = server_url("pools", backend, var) else {
        return;
    };
    for workers in [1, 4, 16] {
        let address = fresh_namespace(&url);
        let store = chorus_server::Store::parse(&address).expect("a store address");
        let mut config = pool_config(30);
        // The test Redis keeps nothing on disk (redis_persistence.rs tests the refusal).
        config.accept_volatile_store = true;
        let bus: Arc<dyn chorus_bus::Bus> = store
            .open(&config)
            .await
            .unwrap_or_else(|e| panic!("the server at {url} is reachable: {e}"));
        let server = Arc::new(TestServer::start_on(bus.clone(), &config).await);
        let metrics = server.clone();
        competing_workers(
            server.clone(),
            async || delivered_metric(&metrics).await,
            workers,
        )
        .await;
        if workers == 1 {
            // A second server on the same store, with a connection of its own.
            let other_bus = store.open(&config).await.expect("open the store again");
            let other = TestServer::start_on(other_bus, &config).await;
            resumed_stream(&server).await;
            hands_back_to_another_server(&server, &other, "back").await;
        }
        drop(bus);
        destroy_namespace(&address).await;
    }
    // The slow handlers, with an ack wait of 1 s.
    let address = fresh_namespace(&url);
    let store = chorus_server::Store::parse(&address).unwrap();
    let mut config = pool_config(1);
    config.accept_volatile_store = true;
    let bus = store.open(&config).await.expect("open the store");
    slow_handlers(Arc::new(TestServer::start_on(bus, &config).await)).await;
    destroy_namespace(&address).await;
    // A lease that ends on a full stream, with the same ack wait.
    let address = fresh_namespace(&url);
    let store = chorus_server::Store::parse(&address).unwrap();
    let bus = store.open(&config).await.expect("open the store");
    lease_ends(&TestServer::start_on(bus, &config).await).await;
    destroy_namespace(&address).await;
}

#[cfg(feature = "nats")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_message_of_a_pool_goes_to_one_worker_on_nats() {
    on_store("NATS", "CHORUS_TEST_NATS_URL").await;
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_message_of_a_pool_goes_to_one_worker_on_redis() {
    on_store("Redis", "CHORUS_TEST_REDIS_URL").await;
}

/// A pool's own settings in `chorus.toml` (`[pools.NAME]`) apply to its inbox, whatever the
/// server's: each stream holds its `max_in_flight`, a delivery nobody settles comes back after
/// its `ack_wait_secs`, and a message is dead-lettered after its `max_deliver`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_has_its_own_max_in_flight_ack_wait_and_max_deliver() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = pool_config(30);
    let pools = chorus_server::ServerConfig::from_toml(
        "[pools.pool]\nmax_in_flight = 2\nack_wait_secs = 1\nmax_deliver = 2\n",
    )
    .unwrap()
    .pools;
    config.pools = pools;
    let server = TestServer::start(&db(dir.path()), &config).await;
    publish_to_pool(&server, "own", 3).await;
    // Before the stream opens: the leases start later, so a slow delivery of the first two
    // events cannot make the wait for the next one look shorter than the 1 s ack wait.
    let started = std::time::Instant::now();
    let mut inbox = SseReader::open_with(&server, "pool", BOB, "").await;
    let first: Vec<(String, u64)> = vec![
        delivered(&inbox.next().await),
        delivered(&inbox.next().await),
    ];
    assert!(first.iter().all(|(_, attempt)| *attempt == 1), "{first:?}");
    // Two held, none settled: the third waits (the server's max_in_flight is 16).
    let next = delivered(&inbox.next().await);
    // What comes next is one of the two again, after the pool's 1 s (the server's ack wait is
    // 30 s), or the third once a lease ran out: either way not before 1 s.
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "a third delivery while two were held: {next:?} after {:?}",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the pool's ack wait of 1 s, not the server's 30 s: {:?}",
        started.elapsed()
    );
    // Nothing settled: each message is delivered twice (max_deliver 2), then dead-lettered.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let letters = get_json(&server, "/v1/dead-letters", Some(ADMIN)).await;
        if letters["total"] == 3 {
            for d in letters["items"].as_array().unwrap() {
                assert_eq!(d["reason"]["kind"], "max_deliver", "{d}");
                assert_eq!(d["queue"], "pool");
            }
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "three dead letters after two deliveries each: {letters}"
        );
        // Keep reading (and never settling), so that the store delivers again.
        let _ = inbox.next_within(Duration::from_millis(200)).await;
    }
    server.stop().await;
}

#[cfg(not(feature = "nats"))]
#[test]
fn pools_on_nats_not_built() {
    not_built("pools", "NATS", "nats");
}

#[cfg(not(feature = "redis"))]
#[test]
fn pools_on_redis_not_built() {
    not_built("pools", "Redis", "redis");
}

/// The delivery history of `id`, as `(queue, attempt, step, reader, stream)` with each event's
/// time, once it holds `want` events (written in the background) or after 10 s.
async fn history(server: &TestServer, id: &str, want: usize) -> Vec<serde_json::Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = get_json(
            server,
            &format!("/v1/deliveries?message_id={id}"),
            Some(ADMIN),
        )
        .await;
        let events = body["items"][0]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if events.len() >= want || std::time::Instant::now() > deadline {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_pool_messages_history_shows_each_reader_the_hand_back_and_the_ack() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = pool_config(30);
    c.hand_back_ms = 200;
    for (id, token) in [("replica-1", "t-replica-1"), ("replica-2", "t-replica-2")] {
        let mut entry =
            chorus_server::AgentEntry::with_token_hash(chorus_server::hash_token(token));
        entry.read = vec!["pool".into()];
        c.agents.insert(id.into(), entry);
    }
    let server = TestServer::start(&db(dir.path()), &c).await;
    let [id] = &publish_to_pool(&server, "h", 1).await[..] else {
        unreachable!()
    };
    let mut first = SseReader::open(&server, "pool", "t-replica-1", None).await;
    assert_eq!(delivered(&first.next().await), (id.clone(), 1));
    // The first holder dies (its connection drops, as with kill -9): after the hand-back wait
    // the message goes back to the store and comes again, to the other replica.
    drop(first);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut second = SseReader::open(&server, "pool", "t-replica-2", None).await;
    assert_eq!(delivered(&second.next().await), (id.clone(), 2));
    assert_eq!(settle(&server, "pool", "t-replica-2", id, "ack").await, 204);

    let events = history(&server, id, 4).await;
    let steps: Vec<(u64, &str, Option<&str>)> = events
        .iter()
        .map(|e| {
            (
                e["attempt"].as_u64().unwrap(),
                e["step"].as_str().unwrap(),
                e["reader"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (1, "sent", Some("replica-1")),
            (1, "handed_back", None),
            (2, "sent", Some("replica-2")),
            (2, "acked", Some("replica-2")),
        ],
        "{events:?}"
    );
    assert!(events.iter().all(|e| e["queue"] == "pool"), "{events:?}");
    assert_eq!(
        events[0]["stream"], events[1]["stream"],
        "handed back from the stream it was sent on"
    );
    assert_ne!(events[0]["stream"], events[2]["stream"]);
    let times: Vec<i64> = events
        .iter()
        .map(|e| e["at_ms"].as_i64().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(
        times[1] - times[0] >= 200,
        "handed back after the hand-back wait: {times:?}"
    );
    // An admin-only route; an unknown id has no events.
    let r = client()
        .get(server.url(&format!("/v1/deliveries?message_id={id}")))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(
        history(&server, "never-sent", 0).await,
        Vec::<serde_json::Value>::new()
    );
    drop(second);
    server.stop().await;
}
