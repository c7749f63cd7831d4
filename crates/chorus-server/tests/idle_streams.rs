//! What an idle inbox stream costs: nothing until a message comes, on memory, SQLite, NATS and Redis
//! (the latter two when CHORUS_TEST_NATS_URL / CHORUS_TEST_REDIS_URL are set). Alone in its
//! test binary, since it measures the CPU time of its whole process.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;

/// CPU time (user and system) this process has used, in milliseconds.
fn cpu_ms() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name, which ends with the last ')'.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // Linux reports CPU time in clock ticks of 1/100 s (USER_HZ).
    ticks * 10
}

/// Opens 1,000 streams on `bob`'s inbox, checks that idle they use under 1% of a core and
/// that a message still reaches one of them at once; the streams are closed after.
async fn idle_cost(server: &TestServer, store: &str) {
    let mut streams = Vec::with_capacity(1000);
    for _ in 0..1000 {
        streams.push(SseReader::open(server, "bob", BOB, None).await);
    }
    // Settle in, then measure the idle cost over 5 s.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu, wall) = (cpu_ms(), Instant::now());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let used = cpu_ms() - cpu;
    let share = used as f64 / wall.elapsed().as_millis() as f64;
    let _ = writeln!(
        std::io::stderr(),
        "{store}: 1000 idle streams: {used} ms of CPU in {:?} ({:.2}% of a core)",
        wall.elapsed(),
        share * 100.0
    );
    assert!(share < 0.01, "{store}: {:.2}% of a core", share * 100.0);
    // They are awake all the same: a message reaches one of them at once.
    let r = publish(server, ALICE, &message("wake", "alice", "bob", "x")).await;
    assert_eq!(r.status(), 201);
    let woke = Instant::now();
    let mut got = None;
    while got.is_none() && woke.elapsed() < Duration::from_secs(5) {
        for s in &mut streams {
            if let Some(e) = s.next_within(Duration::from_millis(1)).await {
                got = Some(delivered(&e).0);
                break;
            }
        }
    }
    assert_eq!(
        got.as_deref(),
        Some("wake"),
        "{store}: delivered to one idle stream"
    );
}

// One test, each store in turn: it measures the CPU time of its whole process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_inbox_streams_cost_almost_nothing_on_every_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.rate_per_sec = 0.0;
    // The test Redis keeps nothing on disk (redis_persistence.rs tests the refusal).
    config.accept_volatile_store = true;
    let memory = chorus_server::Store::memory().open(&config).await.unwrap();
    let server = TestServer::start_on(memory, &config).await;
    idle_cost(&server, "memory").await;
    server.stop().await;
    let server = TestServer::start(&db(dir.path()), &config).await;
    idle_cost(&server, "sqlite").await;
    server.stop().await;
    #[cfg(feature = "nats")]
    run_on_server(
        "idle streams",
        "NATS",
        "CHORUS_TEST_NATS_URL",
        &config,
        async |s| idle_cost(s, "NATS").await,
    )
    .await;
    #[cfg(feature = "redis")]
    run_on_server(
        "idle streams",
        "Redis",
        "CHORUS_TEST_REDIS_URL",
        &config,
        async |s| idle_cost(s, "Redis").await,
    )
    .await;
    #[cfg(not(feature = "nats"))]
    not_built("idle streams", "NATS", "nats");
    #[cfg(not(feature = "redis"))]
    not_built("idle streams", "Redis", "redis");
}
