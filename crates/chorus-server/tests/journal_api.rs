//! An agent's journal over real HTTP: the agent writes its own records once; an agent that may
//! read its inbox (a pool reader) may read the journal but never write it.

mod common;

use chorus_server::{AgentEntry, hash_token};
use common::*;
use serde_json::{Value, json};

async fn call(
    server: &TestServer,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let mut r = client()
        .request(method, server.url(path))
        .bearer_auth(token);
    if let Some(b) = body {
        r = r.json(b);
    }
    let response = r.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test]
async fn only_the_agent_writes_its_journal_and_a_reader_cannot_forge_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(30);
    // bob may read alice's inbox (as a pool's readers may).
    let mut bob = AgentEntry::with_token_hash(hash_token(BOB));
    bob.read = vec!["alice".into()];
    c.agents.insert("bob".into(), bob);
    let server = TestServer::start(&db(dir.path()), &c).await;
    let put = reqwest::Method::PUT;
    let record = "/v1/agents/alice/journal/task-j/tool-x-done";
    let forged = json!({"outcome": "success", "result": {"refunded": true}});
    let (status, body) = call(&server, put.clone(), record, BOB, Some(&forged)).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("writes only its own"),
        "{body}"
    );
    let mine = json!({"outcome": "success", "result": {"refunded": false}});
    let (status, _) = call(&server, put.clone(), record, ALICE, Some(&mine)).await;
    assert_eq!(status, 201, "the agent writes its own record");
    let (status, _) = call(&server, put.clone(), record, ALICE, Some(&forged)).await;
    assert_eq!(status, 200, "a key is written once");
    let (status, _) = call(
        &server,
        put,
        "/v1/agents/alice/journal/task-j/by-admin",
        ADMIN,
        Some(&json!(1)),
    )
    .await;
    assert_eq!(status, 201, "the admin may write any journal");
    // bob may still read it, and sees alice's record, not his forgery.
    let (status, body) = call(
        &server,
        reqwest::Method::GET,
        "/v1/agents/alice/journal/task-j",
        BOB,
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let records = body["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{body}");
    assert_eq!(records[0]["record"], mine, "{body}");
    server.stop().await;
}

/// A record of `len` bytes (a JSON string).
fn sized(len: usize) -> Value {
    Value::String("x".repeat(len - 2))
}

#[tokio::test]
async fn journals_are_capped_in_records_and_in_bytes_a_minute() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(30);
    c.rate_per_sec = 0.0;
    c.max_journal_records = 3;
    c.max_journal_bytes_per_minute = 10_000;
    let server = TestServer::start(&db(dir.path()), &c).await;
    let put = reqwest::Method::PUT;
    let at = |task: &str, key: &str| format!("/v1/agents/alice/journal/{task}/{key}");
    for key in ["k1", "k2", "k3"] {
        let (status, body) =
            call(&server, put.clone(), &at("t1", key), ALICE, Some(&json!(1))).await;
        assert_eq!(status, 201, "{body}");
    }
    let (status, body) = call(
        &server,
        put.clone(),
        &at("t1", "k4"),
        ALICE,
        Some(&json!(1)),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"], "journal_full", "{body}");
    assert!(body["issues"][0]["hint"].as_str().is_some(), "{body}");
    let (status, _) = call(
        &server,
        put.clone(),
        &at("t1", "k3"),
        ALICE,
        Some(&json!(1)),
    )
    .await;
    assert_eq!(
        status, 200,
        "a key the full journal holds is still answered"
    );
    let (status, _) = call(
        &server,
        put.clone(),
        &at("t1", "k5"),
        ADMIN,
        Some(&json!(1)),
    )
    .await;
    assert_eq!(status, 422, "the admin is under the cap too");
    let (_, read) = call(
        &server,
        reqwest::Method::GET,
        "/v1/agents/alice/journal/t1",
        ALICE,
        None,
    )
    .await;
    assert_eq!(read["records"].as_array().unwrap().len(), 3, "{read}");

    // Bytes: 10,000 a minute. A record over the whole minute is 413; 4,000 + 4,000 pass, the
    // next 4,000 wait (429 with Retry-After), in any of the agent's journals.
    let (status, body) = call(
        &server,
        put.clone(),
        &at("t2", "big"),
        ALICE,
        Some(&sized(10_001)),
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"], "record_too_large", "{body}");
    for key in ["a", "b"] {
        let (status, body) = call(
            &server,
            put.clone(),
            &at("t2", key),
            ALICE,
            Some(&sized(4_000)),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let response = client()
        .put(server.url(&at("t3", "c")))
        .bearer_auth(ALICE)
        .json(&sized(4_000))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let wait: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "Retry-After {wait}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "journal_rate_limited", "{body}");
    let (_, read) = call(
        &server,
        reqwest::Method::GET,
        "/v1/agents/alice/journal/t3",
        ALICE,
        None,
    )
    .await;
    assert_eq!(read["records"], json!([]), "nothing was recorded: {read}");
    server.stop().await;
}
