//! Redis with a replica: a store address naming both servers with `min_replicas=1` answers a
//! publish 201 (and an ack 204) only once the replica has it; with the replica paused, the
//! publish is a prompt 503 saying so. The primary is then killed with SIGKILL and the replica
//! promoted (by the test: `REPLICAOF NO ONE`, what Sentinel does); chorus follows it by itself,
//! and every publish answered 201 is delivered from the new primary.
//!
//! Runs its own `redis-server` processes on free ports of 127.0.0.1. Tested when
//! CHORUS_TEST_REDIS_URL is set; then a missing `redis-server` fails the test.

#[cfg(feature = "redis")]
mod common;

#[cfg(not(feature = "redis"))]
#[test]
fn redis_not_built() {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** Redis failover NOT tested: built without cargo feature `redis` ***\n"
    );
}

/// Reads bob's inbox until every id of `sent` came, acking each (retrying an ack the store
/// refused meanwhile).
#[cfg(feature = "redis")]
async fn deliver_all(server: &common::TestServer, sent: &std::collections::BTreeSet<String>) {
    use common::*;
    use std::time::{Duration, Instant};

    let mut inbox = SseReader::open(server, "bob", BOB, None).await;
    let mut got = std::collections::BTreeSet::new();
    while &got != sent {
        let Some(event) = inbox.next_within(Duration::from_secs(10)).await else {
            panic!(
                "not delivered: {:?}",
                sent.difference(&got).collect::<Vec<_>>()
            );
        };
        if event.event.as_deref() != Some("message") {
            continue;
        }
        let (id, _) = delivered(&event);
        let deadline = Instant::now() + Duration::from_secs(10);
        while settle(server, "bob", BOB, &id, "ack").await != 204 {
            assert!(Instant::now() < deadline, "the ack of {id}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        got.insert(id);
    }
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_min_replicas_a_201_survives_the_primarys_loss_and_chorus_follows_the_promoted_replica()
 {
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    use chorus_server::Store;
    use common::redis_process::*;
    use common::*;

    if server_url("Redis failover", "Redis", "CHORUS_TEST_REDIS_URL").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary_dir, replica_dir) = (dir.path().join("p"), dir.path().join("r"));
    std::fs::create_dir_all(&primary_dir).unwrap();
    std::fs::create_dir_all(&replica_dir).unwrap();
    let (p, r) = (free_port(), free_port());
    let primary = RedisProcess::start(&primary_dir, p, &DURABLE);
    let (p_text, r_text) = (p.to_string(), r.to_string());
    let of_primary = [&DURABLE[..], &["--replicaof", "127.0.0.1", &p_text]].concat();
    let replica = RedisProcess::start(&replica_dir, r, &of_primary);
    replica.wait_linked();

    let address = format!("redis://127.0.0.1:{p},127.0.0.1:{r}?min_replicas=1&replica_wait_ms=500");
    let config = config(30);
    let bus = Store::parse(&address)
        .unwrap()
        .open(&config)
        .await
        .expect("the pair is served");
    let server = TestServer::start_on(bus, &config).await;
    let mut sent = BTreeSet::new();
    for i in 0..20 {
        let id = format!("r-{i}");
        let answer = publish(&server, ALICE, &message(&id, "alice", "bob", "kept twice")).await;
        assert_eq!(answer.status(), 201);
        sent.insert(id);
    }

    // The replica paused: a publish is refused within the wait, saying why.
    replica.pause(true);
    let asked = Instant::now();
    let refused = publish(
        &server,
        ALICE,
        &message("unreplicated", "alice", "bob", "x"),
    )
    .await;
    let status = refused.status();
    let body = refused.text().await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("replicas required (min_replicas)"), "{body}");
    assert!(asked.elapsed() < Duration::from_secs(5));
    replica.pause(false);
    replica.wait_linked();
    // A retry of the refused publish is answered once the replica has it (the first try was
    // on the primary already: a duplicate).
    let again = publish(
        &server,
        ALICE,
        &message("unreplicated", "alice", "bob", "x"),
    )
    .await;
    assert!(
        [200, 201].contains(&again.status().as_u16()),
        "{}",
        again.status()
    );
    sent.insert("unreplicated".into());

    // The primary dies; the replica is promoted; a new replica joins it.
    primary.kill();
    assert_eq!(replica.cli(&["REPLICAOF", "NO", "ONE"]).unwrap(), "OK");
    let rejoined = [&DURABLE[..], &["--replicaof", "127.0.0.1", &r_text]].concat();
    let _new_replica = RedisProcess::start(&primary_dir, p, &rejoined);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut refusals = 0;
    loop {
        let answer = publish(&server, ALICE, &message("after", "alice", "bob", "after")).await;
        match answer.status().as_u16() {
            200 | 201 => break,
            503 => refusals += 1,
            other => panic!("a publish during the failover answered {other}"),
        }
        assert!(
            Instant::now() < deadline,
            "chorus did not follow the promoted replica"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    sent.insert("after".into());
    eprintln!("failover followed after {refusals} refused publishes");

    // Everything answered 201 is delivered, from the promoted replica.
    deliver_all(&server, &sent).await;
    server.stop().await;
}

/// The same failover decided by Redis Sentinel: the store address names the Sentinel
/// (`?sentinel=NAME`), the primary is killed, Sentinel promotes the replica, chorus follows the
/// primary Sentinel names; the old primary, restarted, is made a replica by Sentinel, and with
/// `min_replicas=1` publishes are answered 201 again. Every publish answered 201 is delivered.
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chorus_follows_the_primary_redis_sentinel_promotes() {
    use std::collections::BTreeSet;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use chorus_server::Store;
    use common::redis_process::*;
    use common::*;

    if server_url("Redis Sentinel failover", "Redis", "CHORUS_TEST_REDIS_URL").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (primary_dir, replica_dir) = (dir.path().join("p"), dir.path().join("r"));
    std::fs::create_dir_all(&primary_dir).unwrap();
    std::fs::create_dir_all(&replica_dir).unwrap();
    let (p, r, s) = (free_port(), free_port(), free_port());
    let p_text = p.to_string();
    let primary = RedisProcess::start(&primary_dir, p, &DURABLE);
    let of_primary = [&DURABLE[..], &["--replicaof", "127.0.0.1", &p_text]].concat();
    let replica = RedisProcess::start(&replica_dir, r, &of_primary);
    replica.wait_linked();
    let conf = dir.path().join("sentinel.conf");
    std::fs::write(
        &conf,
        format!(
            "port {s}\nbind 127.0.0.1\nsentinel monitor main 127.0.0.1 {p} 1\n\
             sentinel down-after-milliseconds main 1000\nsentinel failover-timeout main 5000\n"
        ),
    )
    .unwrap();
    let mut sentinel = Command::new("redis-server")
        .arg(&conf)
        .arg("--sentinel")
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server runs as a Sentinel");
    let deadline = Instant::now() + PATIENCE;
    while redis_cli(s, &["SENTINEL", "get-master-addr-by-name", "main"])
        .is_none_or(|a| !a.contains(&p_text))
    {
        assert!(
            Instant::now() < deadline,
            "the Sentinel did not find the primary"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let address = format!("redis://127.0.0.1:{s}?sentinel=main&min_replicas=1");
    let config = config(30);
    let bus = Store::parse(&address)
        .unwrap()
        .open(&config)
        .await
        .expect("served through the Sentinel");
    let server = TestServer::start_on(bus, &config).await;
    let mut sent = BTreeSet::new();
    for i in 0..10 {
        let id = format!("s-{i}");
        let answer = publish(&server, ALICE, &message(&id, "alice", "bob", "x")).await;
        assert_eq!(answer.status(), 201);
        sent.insert(id);
    }

    primary.kill();
    let started = Instant::now();
    // The old primary comes back on its port: Sentinel makes it a replica of the new primary.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _back = RedisProcess::start(&primary_dir, p, &DURABLE);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = publish(&server, ALICE, &message("after", "alice", "bob", "after")).await;
        match answer.status().as_u16() {
            200 | 201 => break,
            503 => {}
            other => panic!("a publish during the failover answered {other}"),
        }
        assert!(
            Instant::now() < deadline,
            "chorus did not follow the primary Sentinel promoted"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    sent.insert("after".into());
    eprintln!("Sentinel failover followed after {:?}", started.elapsed());
    assert!(
        replica
            .cli(&["ROLE"])
            .is_some_and(|role| role.starts_with("master")),
        "the replica was promoted"
    );

    deliver_all(&server, &sent).await;
    server.stop().await;
    let _ = sentinel.kill();
    let _ = sentinel.wait();
}
