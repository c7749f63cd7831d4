//! On Redis, `chorus serve` reads the server's persistence settings at start: it refuses a
//! Redis that would lose acknowledged messages on a restart (unless told to accept it), and on
//! one with an append-only file, a message acknowledged before `kill -9` of Redis is delivered
//! after Redis restarts, while one acked before is not delivered again.
//!
//! Runs its own `redis-server` on a free port of 127.0.0.1 (the shared test Redis keeps
//! nothing on disk). Tested when CHORUS_TEST_REDIS_URL is set; then a missing `redis-server`
//! fails the test.

#[cfg(feature = "redis")]
mod common;

/// Says, past the harness's output capture, that this was not tested and why.
fn not_tested(why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** Redis persistence NOT tested: {why} ***\n"
    );
}

#[cfg(not(feature = "redis"))]
#[test]
fn redis_not_built() {
    not_tested("built without cargo feature `redis`");
}

#[cfg(feature = "redis")]
mod private_redis {
    pub use super::common::redis_process::*;
    use chorus_server::Store;

    /// The store at `url`, opened with `config`.
    pub async fn open(
        url: &str,
        config: &chorus_server::ServerConfig,
    ) -> Result<std::sync::Arc<dyn chorus_bus::Bus>, String> {
        Store::parse(url)
            .unwrap()
            .open(config)
            .await
            .map_err(|e| e.to_string())
    }
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn a_volatile_redis_is_refused_and_an_append_only_one_keeps_acknowledged_messages() {
    use common::*;
    use private_redis::*;

    if std::env::var("CHORUS_TEST_REDIS_URL").is_err() {
        return not_tested("CHORUS_TEST_REDIS_URL not set");
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();

    // No append-only file, no snapshots: refused, with what to do; accepted when asked.
    let volatile = RedisProcess::start(dir.path(), port, &["--appendonly", "no", "--save", ""]);
    let refused = open(&volatile.url, &config(30))
        .await
        .err()
        .expect("refused");
    assert!(refused.contains("would not survive"), "{refused}");
    assert!(refused.contains("appendonly yes"), "{refused}");
    assert!(refused.contains("accept_volatile_store"), "{refused}");
    let mut accepting = config(30);
    accepting.accept_volatile_store = true;
    assert!(open(&volatile.url, &accepting).await.is_ok());
    volatile.kill();

    // Snapshots only are refused too: a crash loses what came after the last one.
    let snapshots = RedisProcess::start(
        dir.path(),
        port,
        &["--appendonly", "no", "--save", "3600 1"],
    );
    let refused = open(&snapshots.url, &config(30))
        .await
        .err()
        .expect("refused");
    assert!(refused.contains("snapshots only"), "{refused}");
    snapshots.kill();

    // An append-only file fsync'd on every write: served; two published, one acked, then Redis
    // is killed with -9 and restarted on the same files.
    let durable = DURABLE;
    let redis = RedisProcess::start(dir.path(), port, &durable);
    let bus = open(&redis.url, &config(30))
        .await
        .expect("an append-only Redis is served");
    let server = TestServer::start_on(bus, &config(30)).await;
    for id in ["kept-1", "kept-2"] {
        assert_eq!(
            publish(&server, ALICE, &message(id, "alice", "bob", "hi"))
                .await
                .status(),
            201
        );
    }
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(delivered(&inbox.next().await).0, "kept-1");
    assert_eq!(settle(&server, "bob", BOB, "kept-1", "ack").await, 204);
    drop(inbox);
    server.stop().await;
    redis.kill();

    let redis = RedisProcess::start(dir.path(), port, &durable);
    let bus = open(&redis.url, &config(2)).await.expect("reopened");
    let server = TestServer::start_on(bus, &config(2)).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let event = inbox.next().await;
    assert_eq!(
        delivered(&event).0,
        "kept-2",
        "the unacked message survived the restart"
    );
    assert_eq!(settle(&server, "bob", BOB, "kept-2", "ack").await, 204);
    assert!(
        inbox
            .next_within(std::time::Duration::from_millis(500))
            .await
            .is_none(),
        "the message acked before the restart is not delivered again"
    );
    drop(inbox);
    server.stop().await;
}
