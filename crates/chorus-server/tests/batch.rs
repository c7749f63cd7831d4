//! Batch requests over real HTTP: `POST /v1/messages/batch` answers each document on its own
//! and stores only the accepted ones; `POST /v1/agents/{agent}/inbox/ack` settles each held
//! delivery on its own.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

async fn post_json(server: &TestServer, path: &str, token: &str, body: &Value) -> (u16, Value) {
    let r = client()
        .post(server.url(path))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    (status, r.json().await.expect("a JSON answer"))
}

async fn dead_letter_count(server: &TestServer) -> usize {
    let letters = get_json(server, "/v1/dead-letters", Some(ADMIN)).await;
    letters["items"].as_array().expect("a page").len()
}

#[tokio::test]
async fn a_batch_answers_each_document_and_stores_only_the_accepted_ones() {
    let (_dir, server) = fresh(30).await;
    assert_eq!(
        publish(&server, ALICE, &message("before", "alice", "bob", "x"))
            .await
            .status(),
        201
    );
    let invalid =
        json!({"role": "user", "id": "bad", "name": "alice", "recipient": "bob", "content": 5});
    let batch = json!([
        message("b1", "alice", "bob", "one"),
        message("forged", "bob", "alice", "not mine"),
        invalid,
        message("before", "alice", "bob", "x"),
        message("b1", "alice", "bob", "one"),
        message("b2\r\nX-Injected: 1", "alice", "bob", "header"),
        [1, 2],
        message("b3", "alice", "bob", "three"),
        message("before", "alice", "bob", "other content"),
    ]);
    let (status, answer) = post_json(&server, "/v1/messages/batch", ALICE, &batch).await;
    assert_eq!(status, 200, "{answer}");
    let results = answer["results"].as_array().expect("results");
    let got: Vec<(u64, Value)> = results
        .iter()
        .map(|r| (r["status"].as_u64().unwrap(), r["id"].clone()))
        .collect();
    // The two b1 (same content) run concurrently: one is stored, the other is its duplicate.
    let b1: Vec<u64> = [0, 4].iter().map(|&i| got[i].0).collect();
    assert!(b1 == [201, 200] || b1 == [200, 201], "{answer}");
    assert_eq!(
        [1, 2, 3, 5, 6, 7].map(|i| got[i].clone()),
        [
            (403, json!("forged")),
            (422, json!("bad")),
            (200, json!("before")),
            (400, Value::Null),
            (422, Value::Null),
            (201, json!("b3")),
        ],
        "{answer}"
    );
    assert_eq!(results[1]["problem"]["error"], "forbidden");
    assert_eq!(results[2]["problem"]["issues"][0]["pointer"], "/content");
    assert!(
        results[2]["problem"]["dead_letter_id"].is_string(),
        "as a single publish: kept as a dead letter"
    );
    assert_eq!(results[5]["problem"]["error"], "bad_id");
    assert_eq!(results[7]["queues"], json!(["bob"]));
    // The same id as a stored message with other content: a conflict, as on its own.
    assert_eq!(got[8], (409, json!("before")), "{answer}");
    assert_eq!(results[8]["problem"]["error"], "conflict");
    assert!(results[7].get("problem").is_none());

    // bob gets "before", b1 and b3, each once; alice gets nothing.
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (id, attempt) = delivered(&inbox.next().await);
        assert_eq!(attempt, 1);
        assert_eq!(settle(&server, "bob", BOB, &id, "ack").await, 204);
        ids.push(id);
    }
    ids.sort();
    assert_eq!(ids, ["b1", "b3", "before"]);
    assert!(
        inbox
            .next_within(Duration::from_millis(500))
            .await
            .is_none()
    );
    let mut alice = SseReader::open(&server, "alice", ALICE, None).await;
    assert!(
        alice
            .next_within(Duration::from_millis(300))
            .await
            .is_none(),
        "the forged one was not stored"
    );
    assert_eq!(
        dead_letter_count(&server).await,
        1,
        "the invalid document only"
    );
}

#[tokio::test]
async fn a_batch_that_is_not_a_list_of_one_to_a_hundred_documents_is_refused() {
    let (_dir, server) = fresh(30).await;
    let one = message("m1", "alice", "bob", "x");
    let hundred_and_one: Vec<Value> = (0..101)
        .map(|i| message(&format!("m{i}"), "alice", "bob", "x"))
        .collect();
    for (body, error) in [
        (one.clone(), "malformed_json"),
        (json!([]), "empty_batch"),
        (json!(hundred_and_one), "batch_too_large"),
    ] {
        let (status, answer) = post_json(&server, "/v1/messages/batch", ALICE, &body).await;
        assert_eq!(
            (status, answer["error"].as_str()),
            (400, Some(error)),
            "{answer}"
        );
    }
    let (status, _) = post_json(&server, "/v1/messages/batch", ADMIN, &json!([one])).await;
    assert_eq!(status, 403, "the admin token cannot publish");
    let (status, _) = post_json(
        &server,
        "/v1/messages/batch",
        "no-such-token",
        &json!([one]),
    )
    .await;
    assert_eq!(status, 401);
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert!(
        inbox
            .next_within(Duration::from_millis(300))
            .await
            .is_none(),
        "nothing stored"
    );
}

#[tokio::test]
async fn a_batch_of_acks_settles_each_held_delivery_on_its_own() {
    let (_dir, server) = fresh(30).await;
    for id in ["m1", "m2", "m3"] {
        assert_eq!(
            publish(&server, ALICE, &message(id, "alice", "bob", "x"))
                .await
                .status(),
            201
        );
    }
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    for id in ["m1", "m2", "m3"] {
        assert_eq!(delivered(&inbox.next().await), (id.into(), 1));
    }
    let acks = json!([
        {"message_id": "m1", "attempt": 1},
        {"message_id": "m2", "attempt": 2},
        {"message_id": "m9"},
        {"message_id": "m3"},
        {"message_id": "m3"},
    ]);
    let (status, _) = post_json(&server, "/v1/agents/bob/inbox/ack", ALICE, &acks).await;
    assert_eq!(status, 403, "another agent's inbox");
    let (status, answer) = post_json(&server, "/v1/agents/bob/inbox/ack", BOB, &acks).await;
    assert_eq!(status, 200, "{answer}");
    let results: Vec<(&str, u64)> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["message_id"].as_str().unwrap(),
                r["status"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("m1", 204),
            ("m2", 409),
            ("m9", 404),
            ("m3", 204),
            ("m3", 404)
        ]
    );
    assert_eq!(answer["results"][1]["problem"]["error"], "superseded");
    assert_eq!(answer["results"][2]["problem"]["error"], "not_held");
    // A repeated id is answered as a second ack of it would be, on every store.
    assert_eq!(answer["results"][4]["problem"]["error"], "not_held");

    // m2 is still held (its attempt 1): acked on its own, then nothing is left.
    assert_eq!(
        settle(&server, "bob", BOB, "m1", "ack").await,
        404,
        "already settled"
    );
    assert_eq!(settle(&server, "bob", BOB, "m2", "ack").await, 204);
    drop(inbox);
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert!(
        inbox
            .next_within(Duration::from_millis(500))
            .await
            .is_none(),
        "all settled"
    );

    let (status, answer) = post_json(
        &server,
        "/v1/agents/bob/inbox/ack",
        BOB,
        &json!([{"message_id": 7}]),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(answer["issues"][0]["pointer"], "/0/message_id");
    let (status, answer) = post_json(&server, "/v1/agents/bob/inbox/ack", BOB, &json!([])).await;
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("empty_batch"))
    );
}
