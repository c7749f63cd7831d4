//! What one agent can make the server hold or accept: the cap on the inboxes it creates by
//! publishing, the cap on the inbox streams it holds open, and documents `chorus validate`
//! refuses (duplicate keys) refused at publish too.

mod common;

use common::*;
use serde_json::Value;

/// Publishes raw bytes as alice; the status and the JSON answer.
async fn publish_bytes(server: &TestServer, body: &str) -> (u16, Value) {
    let response = client()
        .post(server.url("/v1/messages"))
        .bearer_auth(ALICE)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn duplicate_keys_are_refused_at_their_pointer_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    // Which `id` or `recipient` a reader keeps differs between JSON libraries: the sender's
    // intent is unknown, so the document is refused, at the key given twice.
    let cases = [
        (
            r#"{"role":"user","id":"m-1","id":"m-2","name":"alice","recipient":"bob","content":"hi"}"#,
            "/id",
        ),
        (
            r#"{"role":"user","id":"m-3","name":"alice","recipient":"bob","recipient":"carol","content":"hi"}"#,
            "/recipient",
        ),
        (
            r#"{"role":"user","id":"m-4","name":"alice","recipient":"bob","content":"hi","metadata":{"task_id":"a","task_id":"b"}}"#,
            "/metadata/task_id",
        ),
    ];
    for (body, pointer) in cases {
        let (status, answer) = publish_bytes(&server, body).await;
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["issues"][0]["pointer"], pointer, "{answer}");
        let text = answer["issues"][0]["message"].as_str().unwrap();
        assert!(text.contains("twice"), "{text}");
    }
    // Malformed JSON stays a 400 with its line and column; the same document with each key
    // once is stored.
    let (status, answer) = publish_bytes(&server, r#"{"role":"user","id":"#).await;
    assert_eq!(status, 400, "{answer}");
    let (status, _) = publish_bytes(
        &server,
        r#"{"role":"user","id":"m-1","name":"alice","recipient":"bob","content":"hi"}"#,
    )
    .await;
    assert_eq!(status, 201);
    let metrics = metrics_text(&server).await;
    assert!(
        metrics.lines().any(|l| l == "chorus_published_total 1"),
        "only the last one was stored:\n{metrics}"
    );
    server.stop().await;
}

#[tokio::test]
async fn an_agent_creates_at_most_its_cap_of_new_inboxes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.accept_unknown_recipients = true;
    config.max_new_inboxes = 3;
    let server = TestServer::start(&db(dir.path()), &config).await;
    for i in 0..3 {
        let r = publish(
            &server,
            ALICE,
            &message(&format!("m-{i}"), "alice", &format!("new-{i}"), "hi"),
        )
        .await;
        assert_eq!(r.status(), 201, "new inbox {i} is within the cap");
    }
    let over = publish(&server, ALICE, &message("m-over", "alice", "new-3", "hi")).await;
    assert_eq!(over.status(), 422);
    let answer: Value = over.json().await.unwrap();
    assert_eq!(answer["issues"][0]["pointer"], "/recipient", "{answer}");
    assert!(
        answer["issues"][0]["hint"]
            .as_str()
            .unwrap()
            .contains("max_new_inboxes"),
        "{answer}"
    );
    // Inboxes already made, and configured agents, do not count; another agent has its own cap.
    let again = publish(&server, ALICE, &message("m-again", "alice", "new-0", "hi")).await;
    assert_eq!(again.status(), 201);
    let to_bob = publish(&server, ALICE, &message("m-bob", "alice", "bob", "hi")).await;
    assert_eq!(to_bob.status(), 201);
    let from_bob = publish(&server, BOB, &message("m-b", "bob", "new-3", "hi")).await;
    assert_eq!(from_bob.status(), 201, "bob's first new inbox");

    // The refused message made no inbox and stored nothing: 6 stored, new-3 holds bob's only.
    let metrics = metrics_text(&server).await;
    assert!(
        metrics.lines().any(|l| l == "chorus_published_total 6"),
        "{metrics}"
    );
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"chorus_inbox_backlog{inbox="new-3"} 1"#),
        "{metrics}"
    );
    server.stop().await;
}

/// One agent holds at most `max_streams_per_agent` inbox streams open (its own inbox and the
/// pools it reads together); one more is refused with 429 and Retry-After, other agents are not
/// affected, and a closed stream is given back.
#[tokio::test]
async fn an_agent_holds_at_most_its_cap_of_open_streams() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.max_streams_per_agent = 2;
    config.agents.get_mut("bob").unwrap().read = vec!["pool".into()];
    let server = TestServer::start(&db(dir.path()), &config).await;
    let open = |inbox: &'static str, token: &'static str| {
        client()
            .get(server.url(&format!("/v1/agents/{inbox}/inbox")))
            .bearer_auth(token)
            .send()
    };
    let first = open("bob", BOB).await.unwrap();
    let second = open("pool", BOB).await.unwrap();
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = open("bob", BOB).await.unwrap();
    assert_eq!(third.status(), 429);
    assert_eq!(third.headers()["retry-after"], "1");
    let body: Value = third.json().await.unwrap();
    assert_eq!(body["error"], "too_many_streams", "{body}");
    let alice = open("alice", ALICE).await.unwrap();
    assert_eq!(alice.status(), 200, "another agent has its own count");
    drop(first);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let again = open("bob", BOB).await.unwrap();
        if again.status() == 200 {
            break;
        }
        assert_eq!(again.status(), 429);
        assert!(
            std::time::Instant::now() < deadline,
            "a closed stream is given back"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    drop((second, alice));
    server.stop().await;
}
