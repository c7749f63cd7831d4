//! What a client without a token can hold: idle and half-open connections are closed after the
//! header timeout, cost little while open, and are bounded in number.

mod common;

use std::time::{Duration, Instant};

use common::*;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// Resident memory of this process (the server and its clients), in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

fn address(server: &TestServer) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_thousand_idle_and_half_open_connections_are_cheap_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.header_timeout_secs = 2;
    let server = TestServer::start(&db(dir.path()), &config).await;
    let addr = address(&server);
    // One complete request first, so what the server sets up once is not counted.
    let health = client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let before = rss_kib();
    let opened = Instant::now();
    let mut streams = Vec::with_capacity(5000);
    for i in 0..5000 {
        let mut s = TcpStream::connect(&addr).await.expect("connect");
        if i % 2 == 0 {
            // Half a request: the headers never end.
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .await
                .unwrap();
        }
        streams.push(s);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let held = rss_kib().saturating_sub(before);
    eprintln!(
        "5000 connections opened in {:?}: {} KiB more resident memory (server and clients)",
        opened.elapsed(),
        held
    );
    assert!(held < 100 * 1024, "{held} KiB for 5000 connections");
    // A keep-alive connection left idle after a complete request is closed too.
    let mut idle = TcpStream::connect(&addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut open = 0;
    for s in &mut streams {
        if !closed_within(s, Duration::from_secs(10)).await {
            open += 1;
        }
    }
    assert_eq!(
        open, 0,
        "connections still open after the 2 s header timeout"
    );
    assert!(closed_within(&mut idle, Duration::from_secs(10)).await);
    let health = client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200, "the server still answers");
    server.stop().await;
}

#[tokio::test]
async fn connections_past_the_limit_are_closed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.max_connections = 4;
    config.header_timeout_secs = 1;
    let server = TestServer::start(&db(dir.path()), &config).await;
    let addr = address(&server);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(&addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut extra = TcpStream::connect(&addr).await.unwrap();
    assert!(
        closed_within(&mut extra, Duration::from_millis(500)).await,
        "the fifth connection is closed at once"
    );
    // Once the held ones time out, connections are served again.
    for s in &mut held {
        assert!(closed_within(s, Duration::from_secs(5)).await);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let health = client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    server.stop().await;
}
