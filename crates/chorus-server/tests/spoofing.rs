//! The spoofing table: every document kind the server is offered, and documents mixing their
//! keys, each with a forged sender, a recipient outside `send_to`, or an id that could inject a
//! path, a header or a log line. Each is refused over real HTTP and nothing is stored; the same
//! documents without the forgery are accepted, so the table cannot pass by refusing everything.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// A seed-003 handoff from `from` to `to` (the shipped example, with its expiry removed).
fn handoff(id: &str, from: &str, to: &str) -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/seeds/003-escalation.json"
    );
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let meta = doc["metadata"].as_object_mut().unwrap();
    meta.remove("expiration_time");
    meta.insert("message_id".into(), id.into());
    meta.insert("sender_id".into(), from.into());
    meta.insert("recipient_id".into(), to.into());
    doc
}

/// The kinds of document a client may send: the two the bus routes and the three it does not.
fn documents(id: &str, from: &str, to: &str) -> Vec<(&'static str, Value)> {
    vec![
        ("message", message(id, from, to, "hi")),
        ("handoff", handoff(id, from, to)),
        (
            "conversation",
            json!({"messages": [message(id, from, to, "hi")], "recipient": to, "name": from}),
        ),
        (
            "harmony-handoff packet",
            json!({"protocol": "harmony_handoff_v1",
                   "meta": {"source_agent": from, "target_agent": to, "timestamp": "2026-01-01T00:00:00Z"},
                   "context": {}}),
        ),
        (
            "data part",
            json!({"type": "data", "kind": "ticket", "data": {"id": id}, "recipient": to, "name": from}),
        ),
    ]
}

/// Documents with the keys of two kinds, each naming different senders, recipients and ids in
/// the places the two kinds keep them.
fn mixed(from: &str, to: &str) -> Vec<(&'static str, Value)> {
    let seed = handoff("h-mixed", "bob", "carol");
    vec![
        (
            "role + messages + handoff metadata (the reported bypass)",
            json!({"role": "user", "content": "hi", "messages": [],
                   "metadata": {"sender_id": "bob", "recipient_id": "carol",
                                "message_id": "../../x\r\nEvil", "task_id": "t"}}),
        ),
        (
            "a message with a handoff's metadata and payload",
            json!({"role": "user", "id": "m-mixed", "name": from, "recipient": to,
                   "content": "hi", "metadata": seed["metadata"], "payload": seed["payload"]}),
        ),
        (
            "a handoff with messages",
            json!({"metadata": seed["metadata"], "payload": seed["payload"], "messages": []}),
        ),
        (
            "a message that is also a data part",
            json!({"role": "user", "type": "data", "id": "m-data", "name": "bob",
                   "recipient": "carol", "content": "hi"}),
        ),
    ]
}

/// Replaces the value at `pointer` (whose parent exists) in a copy of `doc`.
fn with(doc: &Value, pointer: &str, value: &str) -> Value {
    let mut doc = doc.clone();
    *doc.pointer_mut(pointer)
        .unwrap_or_else(|| panic!("{pointer}")) = value.into();
    doc
}

/// Alice may send to bob only; carol is an agent too.
fn spoof_config() -> chorus_server::ServerConfig {
    let mut config = config(30);
    config.agents.get_mut("alice").unwrap().send_to = Some(vec!["bob".into()]);
    config.agents.insert(
        "carol".into(),
        chorus_server::AgentEntry::with_token_hash(chorus_server::hash_token("carol-token")),
    );
    // The test Redis keeps nothing on disk (redis_persistence.rs tests the refusal).
    config.accept_volatile_store = true;
    config
}

#[tokio::test]
async fn forged_documents_of_every_kind_are_refused_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &spoof_config()).await;
    forged_documents_are_refused(&server).await;
    server.stop().await;
}

#[cfg(feature = "nats")]
#[tokio::test]
async fn forged_documents_of_every_kind_are_refused_and_store_nothing_on_nats() {
    let (what, config) = ("the spoofing table", spoof_config());
    run_on_server(
        what,
        "NATS",
        "CHORUS_TEST_NATS_URL",
        &config,
        forged_documents_are_refused,
    )
    .await;
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn forged_documents_of_every_kind_are_refused_and_store_nothing_on_redis() {
    let (what, config) = ("the spoofing table", spoof_config());
    run_on_server(
        what,
        "Redis",
        "CHORUS_TEST_REDIS_URL",
        &config,
        forged_documents_are_refused,
    )
    .await;
}

/// Every forgery of every kind refused with its status and a reason, nothing stored; the same
/// documents unforged are accepted and reach bob.
async fn forged_documents_are_refused(server: &TestServer) {
    let mut refused = Vec::new();
    for (kind, doc) in documents("00000000-0000-4000-8000-000000000001", "alice", "bob") {
        let (sender, id, recipient, task) = match kind {
            "message" => ("/name", "/id", "/recipient", "/metadata"),
            "handoff" => (
                "/metadata/sender_id",
                "/metadata/message_id",
                "/metadata/recipient_id",
                "/metadata/task_id",
            ),
            // Not routed at all: refused as they are, forged or not.
            _ => {
                refused.push((kind.to_owned(), doc, 422));
                continue;
            }
        };
        let forgeries = [
            ("a sender other than the caller", sender, "bob", 403),
            ("a recipient outside send_to", recipient, "carol", 403),
            ("a path in the id", id, "../../x", 400),
            ("a header line in the id", id, "m\r\nX-Evil: 1", 400),
            ("a terminal escape in the id", id, "m\u{1b}[2J", 400),
            ("a wildcard recipient", recipient, "weird.recipient*>", 400),
            ("a pattern recipient", recipient, "billing.*", 400),
        ];
        for (what, pointer, value, status) in forgeries {
            refused.push((
                format!("{kind}: {what}"),
                with(&doc, pointer, value),
                status,
            ));
        }
        let task_doc = if kind == "message" {
            let mut d = doc.clone();
            d["metadata"] = json!({"task_id": "t\r\nEvil"});
            d
        } else {
            with(&doc, task, "t\r\nEvil")
        };
        refused.push((
            format!("{kind}: a line break in the task id"),
            task_doc,
            400,
        ));
        if kind == "handoff" {
            refused.push((
                format!("{kind}: a line break in the correlation id"),
                with(&doc, "/metadata/correlation_id", "c\nEvil"),
                400,
            ));
        }
    }
    for (kind, doc) in mixed("alice", "bob") {
        refused.push((kind.to_owned(), doc, 422));
    }

    for (what, doc, status) in &refused {
        let r = publish(server, ALICE, doc).await;
        let got = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_eq!(got, *status, "{what}: {body}");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}: a reason in {body}"
        );
        assert!(body["dead_letter_id"].is_null(), "{what}: stored {body}");
    }
    eprintln!("{} forged documents refused", refused.len());

    // Nothing was stored anywhere: no publish, no dead letter, no inbox holds anything.
    let metrics = metrics_text(server).await;
    for line in [
        "chorus_published_total 0",
        "chorus_dead_letters 0",
        "chorus_dead_lettered_total 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    for agent in ["bob", "carol"] {
        let mut inbox = SseReader::open(server, agent, ADMIN, None).await;
        assert!(
            inbox
                .next_within(Duration::from_millis(300))
                .await
                .is_none(),
            "{agent}'s inbox is empty"
        );
    }

    // The same documents, unforged, are accepted and reach bob as sent by alice.
    let mut inbox = SseReader::open(server, "bob", BOB, None).await;
    for (i, kind) in ["message", "handoff"].into_iter().enumerate() {
        let id = format!("00000000-0000-4000-8000-00000000000{i}");
        let (_, doc) = documents(&id, "alice", "bob").swap_remove(i);
        let r = publish(server, ALICE, &doc).await;
        assert_eq!(r.status(), 201, "{kind}: {}", r.text().await.unwrap());
        assert_eq!(delivered(&inbox.next().await).0, id, "{kind}");
        assert_eq!(settle(server, "bob", BOB, &id, "ack").await, 204);
    }
}

#[cfg(not(feature = "nats"))]
#[test]
fn the_spoofing_table_on_nats_not_built() {
    not_built("the spoofing table", "NATS", "nats");
}

#[cfg(not(feature = "redis"))]
#[test]
fn the_spoofing_table_on_redis_not_built() {
    not_built("the spoofing table", "Redis", "redis");
}

/// A document refused on publish is filed under the agent whose token published it, not the
/// sender it claims: alice publishes an invalid handoff claiming to come from bob; its dead
/// letter names alice as publisher (before, it was shown as bob's).
#[tokio::test]
async fn a_refused_document_is_filed_under_its_authenticated_publisher() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    let mut forged = handoff("00000000-0000-4000-8000-00000000f0f0", "bob", "alice");
    // A sender that is not a string makes the handoff invalid: the store's validation refuses
    // it and keeps it as a dead letter, where it read (and the UI showed it) as bob's.
    forged["metadata"]["sender_id"] = json!(["bob"]);
    let answer = publish(&server, ALICE, &forged).await;
    let status = answer.status();
    let body: Value = answer.json().await.unwrap();
    assert_eq!(status, 422, "{body}");
    let id = body["dead_letter_id"]
        .as_str()
        .expect("kept as a dead letter");
    let letters = get_json(&server, "/v1/dead-letters", Some(ADMIN)).await;
    let letter = letters["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("{letters}"));
    assert_eq!(letter["reason"]["publisher"], "alice", "{letter}");
    assert_eq!(
        letter["message"]["metadata"]["sender_id"],
        json!(["bob"]),
        "the bytes as sent"
    );
    server.stop().await;
}
