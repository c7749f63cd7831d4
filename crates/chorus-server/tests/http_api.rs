//! End to end over real HTTP on 127.0.0.1: publish, the inbox over SSE, ack, nack, resume
//! after reconnecting, idempotent re-publish (200 for the same content, 409 for other content),
//! an agent's own ack wait, restart on the same SQLite file.

mod common;

use std::time::{Duration, Instant};

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
    // EventSource clients reconnect within half the second (by default) that a closed
    // stream's deliveries wait.
    assert_eq!(first.retry, Some(Duration::from_millis(500)));
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

/// `hand_back_ms` sets how long what a closed stream held waits for its client (reconnecting
/// without `Last-Event-ID` within it, the same delivery comes again; after it, the message is
/// back in the store and comes as a new attempt), and the `retry:` the stream asks for (half).
#[tokio::test]
async fn the_hand_back_wait_is_the_configured_one() {
    // (hand_back_ms, reconnect after, the attempt then): 1 s by default, so each case would
    // see the other attempt with the default.
    for (hand_back_ms, reconnect_after_ms, attempt) in [(5_000, 1_500, 1), (200, 900, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let config = chorus_server::ServerConfig {
            hand_back_ms,
            ..config(30)
        };
        let server = TestServer::start(&db(dir.path()), &config).await;
        let m = message("held", "alice", "bob", "x");
        assert_eq!(publish(&server, ALICE, &m).await.status(), 201);
        let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
        let first = inbox.next().await;
        assert_eq!(first.retry, Some(Duration::from_millis(hand_back_ms / 2)));
        assert_eq!(delivered(&first), ("held".into(), 1));
        drop(inbox);
        tokio::time::sleep(Duration::from_millis(reconnect_after_ms)).await;
        let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
        assert_eq!(
            delivered(&inbox.next().await),
            ("held".into(), attempt),
            "hand_back_ms = {hand_back_ms}, back after {reconnect_after_ms} ms"
        );
        drop(inbox);
        server.stop().await;
    }
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
async fn an_agents_own_max_in_flight_and_max_deliver_and_a_nack_delay_hold_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    let bob = config.agents.get_mut("bob").unwrap();
    bob.max_in_flight = Some(2);
    bob.max_deliver = Some(2);
    let server = TestServer::start(&db(dir.path()), &config).await;
    for i in 0..3 {
        let r = publish(
            &server,
            ALICE,
            &message(&format!("m{i}"), "alice", "bob", "x"),
        )
        .await;
        assert_eq!(r.status(), 201);
    }
    // No `?max_in_flight`: bob's own 2.
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let (first, _) = delivered(&inbox.next().await);
    let (second, _) = delivered(&inbox.next().await);
    inbox
        .assert_quiet(
            Duration::from_millis(500),
            "a third delivery while two are held",
        )
        .await;
    // A nack with a delay frees its slot at once, and the message stays away for the delay.
    let nacked = Instant::now();
    let r = client()
        .post(server.url(&format!("/v1/agents/bob/inbox/{first}/nack")))
        .bearer_auth(BOB)
        .json(&json!({"delay_ms": 1500}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (third, _) = delivered(&inbox.next().await);
    assert!(![first.as_str(), second.as_str()].contains(&third.as_str()));
    for id in [&second, &third] {
        assert_eq!(settle(&server, "bob", BOB, id, "ack").await, 204);
    }
    let (again, attempt) = delivered(&inbox.next().await);
    assert_eq!((again.as_str(), attempt), (first.as_str(), 2));
    let after = nacked.elapsed();
    assert!(after >= Duration::from_millis(1400), "back after {after:?}");
    // Its second delivery is bob's last (max_deliver 2): a nack makes it a dead letter.
    assert_eq!(settle(&server, "bob", BOB, &first, "nack").await, 204);
    let letters = loop {
        let letters = get_json(&server, "/v1/dead-letters", Some(ADMIN)).await;
        if letters["total"] == 1 || nacked.elapsed() > PATIENCE {
            break letters;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        letters["items"][0]["message_id"],
        first.as_str(),
        "{letters}"
    );
    assert_eq!(
        letters["items"][0]["reason"]["kind"], "max_deliver",
        "{letters}"
    );
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn an_invalid_handoff_is_refused_with_every_pointer() {
    let (_dir, server) = fresh(30).await;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seeds/invalid/003-python-invalid-escalation.json"
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
    // Replaying it would be refused again: 422 with the same pointers, the letter kept once.
    let letter = body["dead_letter_id"].as_str().unwrap();
    let replay = client()
        .post(server.url(&format!("/v1/dead-letters/{letter}/replay")))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.status(), 422);
    let why: Value = replay.json().await.unwrap();
    let pointers = |b: &Value| -> Vec<String> {
        b["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["pointer"].to_string())
            .collect()
    };
    assert_eq!(pointers(&why), pointers(&body), "{why}");
    let letters = get_json(&server, "/v1/dead-letters", Some(ADMIN)).await;
    assert_eq!(letters["total"], 1, "kept once: {letters}");
    assert_eq!(letters["items"][0]["id"], letter);
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

/// A handoff's id (handoff ids are UUIDs).
const HANDOFF_ID: &str = "5d0c3a1e-8a4f-4c2b-9e61-0f2d7b9c4a11";

/// Posts `body` as it is (not re-serialised by the client).
async fn publish_raw(server: &TestServer, token: &str, body: &str) -> reqwest::Response {
    client()
        .post(server.url("/v1/messages"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("publish request")
}

#[tokio::test]
async fn an_id_again_is_a_duplicate_with_the_same_content_and_a_conflict_with_other() {
    let (_dir, server) = fresh(30).await;
    let first = r#"{"role": "user", "id": "m-1", "name": "alice", "recipient": "bob", "content": "total: 2 items", "metadata": {"n": 2}}"#;
    assert_eq!(publish_raw(&server, ALICE, first).await.status(), 201);
    // A client retrying after a timeout re-serialises: other key order, spacing, `2.0`.
    let retry = "{\"metadata\":{\"n\":2.0},\"content\":\"total: 2 items\",\"recipient\":\"bob\",\n \"name\":\"alice\",\"id\":\"m-1\",\"role\":\"user\"}";
    let again = publish_raw(&server, ALICE, retry).await;
    assert_eq!(again.status(), 200);
    let receipt: Value = again.json().await.unwrap();
    assert_eq!(
        (receipt["id"].as_str(), receipt["duplicate"].as_bool()),
        (Some("m-1"), Some(true))
    );

    let other = r#"{"role": "user", "id": "m-1", "name": "alice", "recipient": "bob", "content": "total: 3 items", "metadata": {"n": 3}}"#;
    let refused = publish_raw(&server, ALICE, other).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "conflict", "{body}");
    let issue = &body["issues"][0];
    assert_eq!(issue["pointer"], "/id", "{body}");
    let message = issue["message"].as_str().unwrap();
    assert!(
        message.starts_with("expected the content first published under \"m-1\", or a new id")
            && message.contains(", found other content (sha256 "),
        "{message}"
    );
    // Nothing of the stored content comes back, not even its digest (a caller could confirm
    // a guess of someone else's message with it).
    let whole = body.to_string();
    assert_eq!(
        whole.matches("sha256").count(),
        1,
        "only the caller's own digest: {whole}"
    );
    assert!(issue["hint"].as_str().unwrap().contains("new id"), "{body}");

    // A handoff's id is at /metadata/message_id.
    let handoff = json!({
        "metadata": {"message_id": HANDOFF_ID, "sender_id": "alice", "recipient_id": "bob",
                     "task_id": "t-1", "priority": "LOW", "timestamp": "2026-01-01T00:00:00Z",
                     "protocol_version": "1.0.0"},
        "payload": {"handoff_type": "STATUS_UPDATE", "data": {"status": "IN_PROGRESS"}},
        "context": {"workflow_state": "STARTED", "previous_actions": []},
        "instructions": {}
    });
    let stored = publish(&server, ALICE, &handoff).await;
    assert_eq!(stored.status(), 201, "{}", stored.text().await.unwrap());
    let mut changed = handoff.clone();
    changed["payload"]["data"]["status"] = json!("COMPLETED");
    let refused = publish(&server, ALICE, &changed).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(
        body["issues"][0]["pointer"], "/metadata/message_id",
        "{body}"
    );

    // Nothing of the conflicts was stored: bob gets each first content once, then nothing.
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let event = inbox.next().await;
    assert_eq!(delivered(&event), ("m-1".into(), 1));
    assert_eq!(event.json()["message"]["content"], "total: 2 items");
    let event = inbox.next().await;
    assert_eq!(delivered(&event), (HANDOFF_ID.into(), 1));
    assert_eq!(
        event.json()["message"]["payload"]["data"]["status"],
        "IN_PROGRESS"
    );
    for id in ["m-1", HANDOFF_ID] {
        assert_eq!(settle(&server, "bob", BOB, id, "ack").await, 204);
    }
    assert!(
        inbox
            .next_within(Duration::from_millis(300))
            .await
            .is_none()
    );
    drop(inbox);
    let letters = get_json(&server, "/v1/dead-letters", Some(ADMIN)).await;
    assert_eq!(
        letters["items"].as_array().map(Vec::len),
        Some(0),
        "{letters}"
    );
    assert_eq!(letters["total"], 0, "{letters}");

    // The contract lists the 409.
    let spec = get_json(&server, "/openapi.json", None).await;
    let answers = &spec["paths"]["/v1/messages"]["post"]["responses"];
    assert!(answers["409"].is_object(), "{answers}");
    server.stop().await;
}

#[tokio::test]
async fn an_agents_own_ack_wait_applies_to_its_inbox() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.agents.get_mut("bob").unwrap().ack_wait_secs = Some(1);
    let server = TestServer::start(&db(dir.path()), &config).await;
    assert_eq!(
        publish(&server, ALICE, &message("slow", "alice", "bob", "x"))
            .await
            .status(),
        201
    );
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(delivered(&inbox.next().await), ("slow".into(), 1));
    let held = Instant::now();
    // Not acked: delivered again after bob's 1 s, not the server's 30 s.
    assert_eq!(delivered(&inbox.next().await), ("slow".into(), 2));
    let waited = held.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "{waited:?}"
    );
    assert_eq!(settle(&server, "bob", BOB, "slow", "ack").await, 204);
    drop(inbox);
    server.stop().await;
}
