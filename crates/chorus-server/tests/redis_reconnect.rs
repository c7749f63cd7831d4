//! On Redis, `chorus serve` keeps serving through what managed Redis services and their
//! operators do to clients: a `CLIENT KILL`, the server's idle `timeout`, a `kill -9` and
//! restart. Each time the hub recovers by itself within seconds (no restart of chorus): while
//! Redis is down, publishes get a prompt 503 with `Retry-After` and `/healthz` says the store is
//! down; an open inbox stream waits and goes on; every message answered 201 is delivered and
//! none acknowledged with 204 comes again.
//!
//! Runs its own `redis-server` on a free port of 127.0.0.1 with an append-only file (the shared
//! test Redis keeps nothing on disk and must not be killed). Tested when CHORUS_TEST_REDIS_URL
//! is set; then a missing `redis-server` fails the test.

#[cfg(feature = "redis")]
mod common;

#[cfg(not(feature = "redis"))]
#[test]
fn redis_not_built() {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** Redis reconnect NOT tested: built without cargo feature `redis` ***\n"
    );
}

#[cfg(feature = "redis")]
mod reconnect {
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    use super::common::recovery::*;
    use super::common::redis_process::*;
    use super::common::*;
    use chorus_server::Store;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_hub_recovers_by_itself_from_a_killed_connection_an_idle_timeout_and_a_restart() {
        let Some(_) = server_url("Redis reconnect", "Redis", "CHORUS_TEST_REDIS_URL") else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let redis = RedisProcess::start(dir.path(), port, &DURABLE);
        let config = config(30);
        let bus = Store::parse(&redis.url)
            .unwrap()
            .open(&config)
            .await
            .expect("an append-only Redis is served");
        let server = TestServer::start_on(bus, &config).await;
        let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
        let (mut sent, mut acked) = (BTreeSet::new(), BTreeSet::new());

        let first = publish_until_accepted(&server, "before").await;
        assert_eq!(first.refused, 0);
        sent.insert("before".to_owned());
        read_and_ack(&server, &mut inbox, &sent, &mut acked).await;

        // 1. Every client connection killed by an operator (the hub's included).
        let killed = redis.cli(&["CLIENT", "KILL", "TYPE", "normal"]).unwrap();
        assert_ne!(killed, "0", "the hub's connections were there to kill");
        let after_kill = publish_until_accepted(&server, "after-client-kill").await;
        sent.insert("after-client-kill".to_owned());
        read_and_ack(&server, &mut inbox, &sent, &mut acked).await;
        eprintln!(
            "CLIENT KILL: {} refused, served again after {:?}",
            after_kill.refused, after_kill.took
        );

        // 2. The server closes idle clients (as managed services and proxies do).
        assert_eq!(redis.cli(&["CONFIG", "SET", "timeout", "1"]).unwrap(), "OK");
        tokio::time::sleep(Duration::from_secs(3)).await;
        let after_idle = publish_until_accepted(&server, "after-idle-timeout").await;
        sent.insert("after-idle-timeout".to_owned());
        read_and_ack(&server, &mut inbox, &sent, &mut acked).await;
        assert_eq!(redis.cli(&["CONFIG", "SET", "timeout", "0"]).unwrap(), "OK");
        eprintln!(
            "idle timeout: {} refused, served again after {:?}",
            after_idle.refused, after_idle.took
        );

        // 3. Redis killed with -9: prompt 503s and an unhealthy /healthz while it is away; one
        // message published and not yet read stays in the store.
        assert_eq!(
            publish(&server, ALICE, &message("held", "alice", "bob", "held"))
                .await
                .status(),
            201
        );
        sent.insert("held".to_owned());
        redis.kill();
        let asked = Instant::now();
        let refused = publish(&server, ALICE, &message("away", "alice", "bob", "away")).await;
        assert_eq!(refused.status(), 503, "a publish with Redis away");
        assert!(refused.headers().contains_key("retry-after"));
        assert!(
            asked.elapsed() < Duration::from_secs(8),
            "refused promptly: {:?}",
            asked.elapsed()
        );
        let (status, body) = health(&server).await;
        assert_eq!(status, 503, "/healthz with Redis away: {body}");
        assert!(body.contains("redis"), "/healthz names the store: {body}");

        tokio::time::sleep(Duration::from_secs(2)).await;
        let redis = RedisProcess::start(dir.path(), port, &DURABLE);
        let after_restart = publish_until_accepted(&server, "after-restart").await;
        sent.insert("after-restart".to_owned());
        eprintln!(
            "kill -9 and restart: {} refused, served again after {:?}",
            after_restart.refused, after_restart.took
        );
        let deadline = Instant::now() + RECOVERY;
        while health(&server).await.0 != 200 {
            assert!(Instant::now() < deadline, "/healthz stays unhealthy");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // The stream opened before all of this is still the one that reads: the held message
        // and the ones after the restart come on it, nothing acked comes again.
        read_and_ack(&server, &mut inbox, &sent, &mut acked).await;
        inbox
            .assert_quiet(Duration::from_millis(700), "nothing comes twice")
            .await;
        assert_eq!(acked, sent);
        drop(inbox);
        server.stop().await;
        drop(redis);
    }
}
