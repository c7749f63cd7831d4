//! End to end over real HTTP on 127.0.0.1: publish, the inbox over SSE, ack, nack, resume
//! after reconnecting, idempotent re-publish, restart on the same SQLite file.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

async fn metric(server: &TestServer, name: &str) -> f64 {
    let text = metrics_text(server).await;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

#[tokio::test]
async fn publish_receive_ack_and_resume_with_last_event_id() {
    let (_dir, server) = fresh(30).await;
    for i in 1..=3 {
        let r = publish(
            &server,
            ALICE,
            &message(&format!("m{i}"), "alice", "bob", "hi"),
        )
        .await;
        assert_eq!(r.status(), 201);
        let receipt: Value = r.json().await.unwrap();
        assert_eq!(receipt["id"], format!("m{i}"));
        assert_eq!(receipt["duplicate"], false);
        assert_eq!(receipt["queues"], json!(["bob"]));
    }

    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let first = inbox.next().await;
    assert_eq!(first.event.as_deref(), Some("message"));
    assert_eq!(delivered(&first), ("m1".into(), 1));
    assert_eq!(first.json()["message"], message("m1", "alice", "bob", "hi"));
    assert_eq!(settle(&server, "bob", BOB, "m1", "ack").await, 204);
    let second = inbox.next().await;
    assert_eq!(delivered(&second).0, "m2");
    drop(inbox);

    // Reconnecting after m2's event: m3 comes next, m1 (acked) and m2 (seen) do not.
    let last = second.id.clone().expect("events carry ids");
    let mut inbox = SseReader::open(&server, "bob", BOB, Some(&last)).await;
    assert_eq!(delivered(&inbox.next().await).0, "m3");
    drop(inbox);

    // Without Last-Event-ID every unsettled delivery comes again: m2 then m3.
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(delivered(&inbox.next().await).0, "m2");
    assert_eq!(delivered(&inbox.next().await).0, "m3");
    for id in ["m2", "m3"] {
        assert_eq!(
            settle(&server, "bob", BOB, id, "ack").await,
            204,
            "ack {id}"
        );
    }
    assert_eq!(
        settle(&server, "bob", BOB, "m1", "ack").await,
        404,
        "acked twice"
    );
    assert!(
        inbox
            .next_within(Duration::from_millis(300))
            .await
            .is_none(),
        "nothing is left after three acks"
    );
    drop(inbox);

    assert_eq!(metric(&server, "chorus_published_total").await, 3.0);
    assert_eq!(metric(&server, "chorus_acked_total").await, 3.0);
    assert_eq!(metric(&server, "chorus_delivered_total").await, 3.0);
    assert_eq!(metric(&server, "chorus_publish_seconds_count").await, 3.0);
    assert_eq!(metric(&server, "chorus_ack_seconds_count").await, 3.0);
    assert!(metric(&server, "chorus_ack_seconds_sum").await > 0.0);
    assert_eq!(
        metric(&server, "chorus_inbox_backlog{inbox=\"bob\"}").await,
        0.0
    );
    server.stop().await;
}

#[tokio::test]
async fn republishing_an_id_stores_it_once() {
    let (_dir, server) = fresh(30).await;
    let m = message("same-id", "alice", "bob", "once");
    assert_eq!(publish(&server, ALICE, &m).await.status(), 201);
    let again = publish(&server, ALICE, &m).await;
    assert_eq!(again.status(), 200);
    let receipt: Value = again.json().await.unwrap();
    assert_eq!(receipt["id"], "same-id");
    assert_eq!(receipt["duplicate"], true);
    let next = message("next", "alice", "bob", "x");
    assert_eq!(publish(&server, ALICE, &next).await.status(), 201);
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(delivered(&inbox.next().await).0, "same-id");
    assert_eq!(delivered(&inbox.next().await).0, "next");
    assert_eq!(metric(&server, "chorus_duplicates_total").await, 1.0);
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn a_nacked_delivery_comes_again() {
    let (_dir, server) = fresh(30).await;
    publish(&server, ALICE, &message("retry-me", "alice", "bob", "x")).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(delivered(&inbox.next().await), ("retry-me".into(), 1));
    assert_eq!(settle(&server, "bob", BOB, "retry-me", "nack").await, 204);
    assert_eq!(delivered(&inbox.next().await), ("retry-me".into(), 2));
    assert_eq!(settle(&server, "bob", BOB, "retry-me", "later").await, 400);
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn an_invalid_handoff_is_refused_with_every_pointer() {
    let (_dir, server) = fresh(30).await;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seeds/003-python-invalid-escalation.json"
    );
    let mut handoff: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    handoff["metadata"]["sender_id"] = "alice".into();
    handoff["metadata"]["recipient_id"] = "bob".into();
    handoff["metadata"]["message_id"] = "h-1".into();
    let r = publish(&server, ALICE, &handoff).await;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "invalid_message");
    let issues = body["issues"].as_array().unwrap();
    assert!(!issues.is_empty());
    for issue in issues {
        assert!(
            issue["pointer"].as_str().unwrap().starts_with('/'),
            "{issue}"
        );
        assert!(
            issue["message"].as_str().unwrap().contains("expected"),
            "{issue}"
        );
    }
    assert!(
        body["dead_letter_id"].is_string(),
        "kept as a dead letter: {body}"
    );
    assert_eq!(metric(&server, "chorus_dead_letters").await, 1.0);
    server.stop().await;
}

#[tokio::test]
async fn an_unacked_message_survives_a_restart_and_comes_again() {
    let dir = tempfile::tempdir().unwrap();
    let db = db(dir.path());
    let server = TestServer::start(&db, &config(1)).await;
    publish(&server, ALICE, &message("durable", "alice", "bob", "x")).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let seen = inbox.next().await;
    // The open stream must not hold up the shutdown.
    server.stop().await;
    assert!(inbox.next_within(Duration::from_secs(2)).await.is_none());

    let server = TestServer::start(&db, &config(1)).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, seen.id.as_deref()).await;
    assert_eq!(delivered(&inbox.next().await), ("durable".into(), 2));
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn health_and_openapi() {
    let (_dir, server) = fresh(30).await;
    let get = |path: &str| client().get(server.url(path)).send();
    let health: Value = get("/healthz").await.unwrap().json().await.unwrap();
    assert_eq!(health["status"], "ok");
    let doc: Value = get("/openapi.json").await.unwrap().json().await.unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    for path in [
        "/v1/messages",
        "/v1/agents/{agent}/inbox",
        "/v1/agents/{agent}/inbox/{message_id}/ack",
        "/v1/agents/{agent}/inbox/{message_id}/nack",
        "/v1/agents/{agent}/inbox/{message_id}/in-progress",
        "/healthz",
        "/metrics",
    ] {
        assert!(doc["paths"][path].is_object(), "missing {path}");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    server.stop().await;
}
