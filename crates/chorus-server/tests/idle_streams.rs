//! What an idle inbox stream costs: nothing until a message comes. Alone in its test binary,
//! since it measures the CPU time of its whole process.

mod common;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_inbox_streams_cost_almost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.rate_per_sec = 0.0;
    let server = TestServer::start(&db(dir.path()), &config).await;
    let mut streams = Vec::with_capacity(1000);
    for _ in 0..1000 {
        streams.push(SseReader::open(&server, "bob", BOB, None).await);
    }
    // Settle in, then measure the idle cost over 5 s.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu, wall) = (cpu_ms(), Instant::now());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let used = cpu_ms() - cpu;
    let share = used as f64 / wall.elapsed().as_millis() as f64;
    eprintln!(
        "1000 idle streams: {used} ms of CPU in {:?} ({:.2}% of a core)",
        wall.elapsed(),
        share * 100.0
    );
    assert!(share < 0.02, "{:.2}% of a core", share * 100.0);
    // They are awake all the same: a message reaches one of them at once.
    let r = publish(&server, ALICE, &message("wake", "alice", "bob", "x")).await;
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
    assert_eq!(got.as_deref(), Some("wake"), "delivered to one idle stream");
    drop(streams);
    server.stop().await;
}
