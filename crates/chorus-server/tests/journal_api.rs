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
