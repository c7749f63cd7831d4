//! Every refusal over real HTTP: the right status, a clear message, and nothing stored.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

async fn send(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Vec<u8>>,
) -> (u16, Value) {
    let mut r = client().request(method, server.url(path));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    if let Some(b) = body {
        r = r.header("content-type", "application/json").body(b);
    }
    let response = r.send().await.expect("request");
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// A publish and its refusal: (case, status, token, body, a fragment of the message).
type Case = (
    &'static str,
    u16,
    Option<&'static str>,
    Option<Vec<u8>>,
    &'static str,
);

fn bytes(v: &Value) -> Option<Vec<u8>> {
    Some(serde_json::to_vec(v).unwrap())
}

#[tokio::test]
async fn refusals_have_the_right_status_and_store_nothing() {
    use reqwest::Method;
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    let alice = config.agents.get_mut("alice").unwrap();
    alice.send_to = Some(vec!["bob".into()]);
    alice.handoff_types = Some(vec!["INFORMATION_REQUEST".into()]);
    let server = TestServer::start(&db(dir.path()), &config).await;
    let ok = message("m-ok", "alice", "bob", "hi");

    let handoff = |kind: &str| {
        json!({"metadata": {"message_id": "00000000-0000-4000-8000-000000000009",
            "sender_id": "alice", "recipient_id": "bob", "task_id": "t", "priority": "HIGH"},
            "payload": {"handoff_type": kind, "data": {}}})
    };
    let cases: Vec<Case> = vec![
        ("no token", 401, None, bytes(&ok), "missing"),
        (
            "a wrong token",
            401,
            Some("not-a-token"),
            bytes(&ok),
            "unknown token",
        ),
        (
            "a spoofed sender",
            403,
            Some(BOB),
            bytes(&ok),
            "sends only as itself",
        ),
        (
            "a spoofed handoff sender",
            403,
            Some(BOB),
            bytes(&handoff("INFORMATION_REQUEST")),
            "/metadata/sender_id",
        ),
        (
            "a handoff type the policy forbids",
            403,
            Some(ALICE),
            bytes(&handoff("ESCALATION")),
            "handoff_types",
        ),
        (
            "a recipient the policy forbids",
            403,
            Some(ALICE),
            bytes(&message("m-c", "alice", "carol", "hi")),
            "send_to",
        ),
        (
            "the admin token publishing",
            403,
            Some(ADMIN),
            bytes(&ok),
            "admin token cannot publish",
        ),
        (
            "an oversized body",
            413,
            Some(ALICE),
            bytes(&message("m-big", "alice", "bob", &"x".repeat(20_000))),
            "16384 bytes",
        ),
        (
            "malformed JSON",
            400,
            Some(ALICE),
            Some(b"{\"role\": \"user\", \"id\": ".to_vec()),
            "not JSON",
        ),
        (
            "a path in the message id",
            400,
            Some(ALICE),
            bytes(&message("../../etc/passwd", "alice", "bob", "hi")),
            "contains '.'",
        ),
        (
            "a header line in the id",
            400,
            Some(ALICE),
            bytes(&message("m\r\nX-Injected: yes", "alice", "bob", "hi")),
            "contains '\\r'",
        ),
        (
            "a path in the recipient",
            400,
            Some(ALICE),
            bytes(&message("m-path", "alice", "bob/../alice", "hi")),
            "contains '/'",
        ),
    ];
    for (what, status, token, body, fragment) in cases {
        let (got, answer) = send(&server, Method::POST, "/v1/messages", token, body).await;
        assert_eq!(got, status, "{what}: {answer}");
        let text = answer["message"].as_str().unwrap_or_default();
        assert!(text.contains(fragment), "{what}: {fragment:?} in {answer}");
    }

    let (status, answer) = send(
        &server,
        Method::POST,
        "/v1/messages",
        Some(ALICE),
        Some(b"{\"a\":".to_vec()),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        answer["message"].as_str().unwrap().contains("line 1"),
        "{answer}"
    );

    // Reading: another agent's inbox, no token, an injected agent id, an injected message id.
    let reads = [
        (
            "another agent's inbox",
            403,
            "/v1/agents/alice/inbox",
            Some(BOB),
        ),
        ("no token", 401, "/v1/agents/bob/inbox", None),
        (
            "an encoded path",
            400,
            "/v1/agents/..%2Falice/inbox",
            Some(BOB),
        ),
        (
            "an encoded header line",
            400,
            "/v1/agents/bob%0D%0AX-Evil:%201/inbox",
            Some(BOB),
        ),
    ];
    for (what, status, path, token) in reads {
        let (got, answer) = send(&server, Method::GET, path, token, None).await;
        assert_eq!(got, status, "{what}: {answer}");
    }
    assert_eq!(
        settle(&server, "bob", BOB, "m%0Ax", "ack").await,
        400,
        "an injected id on ack"
    );
    assert_eq!(
        settle(&server, "alice", BOB, "m1", "ack").await,
        403,
        "acking for another agent"
    );
    let (got, _) = send(&server, Method::GET, "/metrics", Some(ALICE), None).await;
    assert_eq!(got, 403, "metrics need the admin token");

    // Nothing was stored: no dead letters, nothing published, and the first message either
    // inbox receives is one sent afterwards.
    let metrics = metrics_text(&server).await;
    for line in [
        "chorus_published_total 0",
        "chorus_dead_letters 0",
        "chorus_dead_lettered_total 0",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    for (agent, token, from, from_token) in
        [("bob", BOB, "alice", ALICE), ("alice", ALICE, "bob", BOB)]
    {
        let sentinel = message(&format!("after-{agent}"), from, agent, "after");
        assert_eq!(publish(&server, from_token, &sentinel).await.status(), 201);
        let mut inbox = SseReader::open(&server, agent, token, None).await;
        assert_eq!(delivered(&inbox.next().await).0, format!("after-{agent}"));
        assert!(
            inbox
                .next_within(Duration::from_millis(300))
                .await
                .is_none()
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn an_unauthorized_answer_names_the_bearer_scheme() {
    let (_dir, server) = fresh(30).await;
    let r = client()
        .get(server.url("/v1/agents/bob/inbox"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(
        r.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    server.stop().await;
}

#[tokio::test]
async fn an_agent_over_its_rate_is_refused_with_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    // One request per 100 s after the burst: no refill while the test runs.
    config.rate_per_sec = 0.01;
    config.rate_burst = 2;
    let server = TestServer::start(&db(dir.path()), &config).await;
    for i in 0..2 {
        let m = message(&format!("r{i}"), "alice", "bob", "x");
        assert_eq!(publish(&server, ALICE, &m).await.status(), 201);
    }
    let refused = publish(&server, ALICE, &message("r2", "alice", "bob", "x")).await;
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((50..=100).contains(&wait), "retry after {wait} s");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "rate_limited");
    let other = message("b0", "bob", "alice", "x");
    assert_eq!(
        publish(&server, BOB, &other).await.status(),
        201,
        "per agent"
    );
    let metrics = metrics_text(&server).await;
    assert!(
        metrics.lines().any(|l| l == "chorus_published_total 3"),
        "{metrics}"
    );
    server.stop().await;
}

#[tokio::test]
async fn acks_have_a_rate_limit_of_their_own_apart_from_publishing() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    // Two publishes per agent, then none for 100 s; one settle, then none for 100 s.
    config.rate_per_sec = 0.01;
    config.rate_burst = 2;
    config.settle_rate_per_sec = 0.01;
    let server = TestServer::start(&db(dir.path()), &config).await;
    for i in 0..2 {
        let to_alice = message(&format!("b{i}"), "bob", "alice", "x");
        assert_eq!(publish(&server, BOB, &to_alice).await.status(), 201);
        let to_bob = message(&format!("a{i}"), "alice", "bob", "x");
        assert_eq!(publish(&server, ALICE, &to_bob).await.status(), 201);
    }
    let over = publish(&server, BOB, &message("b2", "bob", "alice", "x")).await;
    assert_eq!(over.status(), 429, "bob's publishes are used up");
    // Bob, who may not publish now, still acknowledges what he reads...
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let (first, _) = delivered(&inbox.next().await);
    assert_eq!(settle(&server, "bob", BOB, &first, "ack").await, 204);
    // ...until his own settle budget is used up: 429 with Retry-After, the delivery kept.
    let (second, _) = delivered(&inbox.next().await);
    let refused = client()
        .post(server.url(&format!("/v1/agents/bob/inbox/{second}/ack")))
        .bearer_auth(BOB)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "rate_limited");
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn routing_refusals_are_json_too() {
    use reqwest::Method;
    let (_dir, server) = fresh(30).await;
    let cases = [
        (Method::GET, "/v1/nowhere", Some(BOB), 404, "not_found"),
        (
            Method::GET,
            "/v1/conversations/c1/messages?after=soon",
            Some(ADMIN),
            400,
            "bad_query",
        ),
        (
            Method::POST,
            "/v1/agents/bob/inbox/m1/later",
            Some(BOB),
            400,
            "bad_path",
        ),
    ];
    for (method, path, token, status, code) in cases {
        let (got, answer) = send(&server, method, path, token, None).await;
        assert_eq!(
            (got, answer["error"].as_str()),
            (status, Some(code)),
            "{path}: {answer}"
        );
    }
    server.stop().await;
}
