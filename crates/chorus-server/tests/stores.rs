//! The HTTP API end to end over a server whose store is NATS JetStream or Redis: publish,
//! idempotent re-publish, the inbox over SSE, ack and nack, a task's timeline, and delivery after
//! a restart. Each test uses a namespace of its own, deleted when it passes.
//!
//! A server is tested when its variable (CHORUS_TEST_NATS_URL, CHORUS_TEST_REDIS_URL) is set,
//! and then an unreachable server fails the test; otherwise the test says it was not tested.

mod common;

/// Says, past the harness's output capture, that a backend was not tested and why.
fn not_tested(backend: &str, why: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "\n*** {backend} backend NOT tested: {why} ***\n"
    );
}

#[cfg(any(feature = "nats", feature = "redis"))]
mod on_server {
    use super::common::*;
    use super::not_tested;
    use serde_json::{Value, json};

    /// The URL in `var`, or `None` after saying the backend was not tested.
    fn server_url(backend: &str, var: &str) -> Option<String> {
        match std::env::var(var) {
            Ok(url) => Some(url),
            Err(_) => {
                not_tested(backend, &format!("{var} not set"));
                None
            }
        }
    }

    /// A fresh namespace, so that runs and tests do not collide.
    fn namespace() -> String {
        format!("chorus_test_srv_{}", uuid::Uuid::new_v4().simple())
    }

    /// A seed-003 escalation from alice to bob with message id `id`.
    fn escalation(id: &str) -> Value {
        let path = format!(
            "{}/../../examples/seeds/003-python-valid-escalation.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut handoff: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("seed file")).expect("JSON");
        handoff["metadata"]["sender_id"] = "alice".into();
        handoff["metadata"]["recipient_id"] = "bob".into();
        handoff["metadata"]["message_id"] = id.into();
        handoff
    }

    /// The whole walk over a server on the store at `address` (which names its namespace).
    async fn walk(address: &str) {
        let store = chorus_server::Store::parse(address).expect("a store address");
        let mut config = config(30);
        // The test Redis keeps nothing on disk (redis_persistence.rs tests the refusal).
        config.accept_volatile_store = true;
        let open = || async {
            store
                .open(&config)
                .await
                .unwrap_or_else(|e| panic!("the server at {address} is reachable: {e}"))
        };
        let server = TestServer::start_on(open().await, &config).await;

        // Publish two messages; the same id again is acknowledged as a duplicate.
        let (m1, m2) = (
            uuid::Uuid::new_v4().to_string(),
            uuid::Uuid::new_v4().to_string(),
        );
        for id in [&m1, &m2] {
            let r = publish(&server, ALICE, &message(id, "alice", "bob", "hi")).await;
            assert_eq!(r.status(), 201);
            let receipt: Value = r.json().await.unwrap();
            assert_eq!(
                (&receipt["id"], &receipt["duplicate"], &receipt["queues"]),
                (&json!(id), &json!(false), &json!(["bob"]))
            );
        }
        let again = publish(&server, ALICE, &message(&m1, "alice", "bob", "hi")).await;
        assert_eq!(again.status(), 200);
        assert_eq!(again.json::<Value>().await.unwrap()["duplicate"], true);

        // Receive over SSE in order; ack the first, nack the second, which comes again.
        let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
        let first = inbox.next().await;
        assert_eq!(delivered(&first), (m1.clone(), 1));
        assert_eq!(first.json()["message"], message(&m1, "alice", "bob", "hi"));
        assert_eq!(settle(&server, "bob", BOB, &m1, "ack").await, 204);
        assert_eq!(delivered(&inbox.next().await), (m2.clone(), 1));
        assert_eq!(settle(&server, "bob", BOB, &m2, "nack").await, 204);
        assert_eq!(delivered(&inbox.next().await), (m2.clone(), 2));
        assert_eq!(settle(&server, "bob", BOB, &m2, "ack").await, 204);
        assert_eq!(
            settle(&server, "bob", BOB, &m1, "ack").await,
            404,
            "acked twice"
        );
        assert!(
            inbox
                .next_within(std::time::Duration::from_millis(300))
                .await
                .is_none(),
            "nothing is left after the acks"
        );
        drop(inbox);

        // Two handoffs of one task: its timeline lists both, in order.
        let (h1, h2) = (
            uuid::Uuid::new_v4().to_string(),
            uuid::Uuid::new_v4().to_string(),
        );
        for id in [&h1, &h2] {
            let r = publish(&server, ALICE, &escalation(id)).await;
            assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        }
        let task: Value = get_json(&server, "/v1/tasks/task-abc-456/messages", Some(ADMIN)).await;
        let task = &task["items"];
        let ids: Vec<&str> = task
            .as_array()
            .expect("a timeline")
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [h1.as_str(), h2.as_str()]);
        assert_eq!(task[0]["handoff_type"], "ESCALATION");
        assert_eq!(task[1]["message"]["metadata"]["message_id"], h2);
        server.stop().await;

        // A new server on the same store delivers the handoffs nobody acknowledged.
        let server = TestServer::start_on(open().await, &config).await;
        let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
        for id in [&h1, &h2] {
            let (got, _) = delivered(&inbox.next().await);
            assert_eq!(&got, id);
            assert_eq!(settle(&server, "bob", BOB, id, "ack").await, 204);
        }
        drop(inbox);
        server.stop().await;
    }

    #[cfg(feature = "nats")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_api_end_to_end_on_nats() {
        let Some(url) = server_url("NATS", "CHORUS_TEST_NATS_URL") else {
            return;
        };
        let ns = namespace();
        walk(&format!("{url}?namespace={ns}")).await;
        let bus = chorus_bus::NatsBus::connect(&url, &ns, Default::default())
            .await
            .expect("reconnect");
        bus.destroy().await.expect("delete the test namespace");
    }

    #[cfg(feature = "redis")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_api_end_to_end_on_redis() {
        let Some(url) = server_url("Redis", "CHORUS_TEST_REDIS_URL") else {
            return;
        };
        let ns = namespace();
        walk(&format!("{url}?namespace={ns}")).await;
        let bus = chorus_bus::RedisBus::connect(&url, &ns, Default::default())
            .await
            .expect("reconnect");
        bus.destroy().await.expect("delete the test namespace");
    }
}

#[cfg(not(feature = "nats"))]
#[test]
fn nats_not_built() {
    not_tested("NATS", "built without cargo feature `nats`");
}

#[cfg(not(feature = "redis"))]
#[test]
fn redis_not_built() {
    not_tested("Redis", "built without cargo feature `redis`");
}
