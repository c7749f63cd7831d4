//! Looking at an inbox (`GET /v1/agents/{agent}/inbox/messages`) over real HTTP: it shows what
//! waits without claiming it, for the agent, its readers and the admin only.

mod common;

use common::*;
use serde_json::Value;

/// The status and JSON answer of a look at `agent`'s inbox with `query`, as `token`.
async fn look(server: &TestServer, agent: &str, query: &str, token: Option<&str>) -> (u16, Value) {
    let mut request =
        client().get(server.url(&format!("/v1/agents/{agent}/inbox/messages{query}")));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let r = request.send().await.expect("look request");
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// The (id, attempts, state) of each listed message.
fn listed(answer: &Value) -> Vec<(String, Value, String)> {
    answer["messages"]
        .as_array()
        .expect("a messages array")
        .iter()
        .map(|m| {
            let id = m["id"].as_str().expect("id").to_owned();
            let state = m["state"].as_str().expect("state").to_owned();
            (id, m["attempts"].clone(), state)
        })
        .collect()
}

#[tokio::test]
async fn looking_at_an_inbox_claims_nothing() {
    let (_dir, server) = fresh(30).await;
    let sent = message("peeked", "alice", "bob", "look, don't touch");
    assert_eq!(publish(&server, ALICE, &sent).await.status(), 201);
    for _ in 0..20 {
        let (status, answer) = look(&server, "bob", "", Some(BOB)).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["depth"], 1);
        assert_eq!(
            listed(&answer),
            [("peeked".to_owned(), 0.into(), "ready".to_owned())]
        );
    }
    let (_, answer) = look(&server, "bob", "", Some(BOB)).await;
    let shown = &answer["messages"][0];
    assert_eq!(shown["message"], sent, "the document as published");
    assert_eq!(
        (&shown["sender"], &shown["priority"]),
        (&Value::from("alice"), &Value::from("MEDIUM"))
    );
    assert!(
        shown.get("until_ms").is_none(),
        "a ready message has no time"
    );

    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(
        delivered(&inbox.next().await),
        ("peeked".into(), 1),
        "twenty looks counted no attempt"
    );
    let (_, answer) = look(&server, "bob", "", Some(BOB)).await;
    // SQLite does not tell a held delivery from a delayed one.
    assert_eq!(
        listed(&answer),
        [("peeked".to_owned(), 1.into(), "held_or_delayed".to_owned())]
    );
    let until = answer["messages"][0]["until_ms"]
        .as_i64()
        .expect("until_ms");
    let now = chorus_bus::now_ms();
    assert!(
        until > now && until <= now + 31_000,
        "held for the ack wait: {until} (now {now})"
    );
    assert_eq!(settle(&server, "bob", BOB, "peeked", "ack").await, 204);
    let (_, answer) = look(&server, "bob", "", Some(BOB)).await;
    assert_eq!((&answer["depth"], listed(&answer).len()), (&0.into(), 0));
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn only_the_agent_its_readers_and_the_admin_may_look() {
    let (_dir, server) = fresh(30).await;
    publish(&server, ALICE, &message("m1", "alice", "bob", "x")).await;
    let (status, answer) = look(&server, "bob", "", Some(ALICE)).await;
    assert_eq!(status, 403, "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("may not read"),
        "{answer}"
    );
    assert_eq!(look(&server, "bob", "", None).await.0, 401);
    assert_eq!(look(&server, "bob", "", Some("not-a-token")).await.0, 401);
    let (status, answer) = look(&server, "bob", "", Some(ADMIN)).await;
    assert_eq!((status, listed(&answer).len()), (200, 1), "{answer}");
    let (status, answer) = look(&server, "bad%20agent", "", Some(ADMIN)).await;
    assert_eq!((status, &answer["error"]), (400, &Value::from("bad_id")));
    server.stop().await;
}

#[tokio::test]
async fn an_agent_looks_at_the_inboxes_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.agents.get_mut("alice").unwrap().read = vec!["support_pool".into()];
    let server = TestServer::start(&db(dir.path()), &config).await;
    publish(&server, BOB, &message("m1", "bob", "support_pool", "x")).await;
    let (status, answer) = look(&server, "support_pool", "", Some(ALICE)).await;
    assert_eq!((status, listed(&answer).len()), (200, 1), "{answer}");
    let (status, _) = look(&server, "support_pool", "", Some(BOB)).await;
    assert_eq!(status, 403, "bob does not read the pool");
    server.stop().await;
}

#[tokio::test]
async fn the_limit_bounds_the_list_but_not_the_depth() {
    let (_dir, server) = fresh(30).await;
    for i in 0..3 {
        let m = message(&format!("m{i}"), "alice", "bob", "x");
        publish(&server, ALICE, &m).await;
    }
    let (_, answer) = look(&server, "bob", "?limit=2", Some(BOB)).await;
    let ids: Vec<String> = listed(&answer).into_iter().map(|(id, ..)| id).collect();
    assert_eq!(
        (ids, &answer["depth"]),
        (vec!["m0".into(), "m1".into()], &3.into())
    );
    let (status, answer) = look(&server, "bob", "?limit=0", Some(BOB)).await;
    assert_eq!(
        (status, listed(&answer).len(), &answer["depth"]),
        (200, 0, &3.into())
    );
    for bad in ["?limit=1001", "?limit=many", "?limit=-1", "?lmit=2"] {
        let (status, answer) = look(&server, "bob", bad, Some(BOB)).await;
        assert_eq!(
            (status, &answer["error"]),
            (400, &Value::from("bad_query")),
            "{bad}: {answer}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn a_message_named_messages_is_still_settled_by_its_id() {
    let (_dir, server) = fresh(30).await;
    publish(&server, ALICE, &message("messages", "alice", "bob", "x")).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(delivered(&inbox.next().await), ("messages".into(), 1));
    assert_eq!(settle(&server, "bob", BOB, "messages", "ack").await, 204);
    let (_, answer) = look(&server, "bob", "", Some(BOB)).await;
    assert_eq!(answer["depth"], 0);
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn the_openapi_document_describes_the_look() {
    let (_dir, server) = fresh(30).await;
    let doc = get_json(&server, "/openapi.json", None).await;
    let op = &doc["paths"]["/v1/agents/{agent}/inbox/messages"]["get"];
    let params: Vec<(&str, &str)> = op["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["in"].as_str().unwrap()))
        .collect();
    assert_eq!(params, [("agent", "path"), ("limit", "query")]);
    let mut statuses: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
    statuses.sort();
    assert_eq!(statuses, ["200", "400", "401", "403"]);
    let states = &doc["components"]["schemas"]["DeliveryState"]["enum"];
    assert_eq!(
        states,
        &serde_json::json!(["ready", "held", "delayed", "held_or_delayed", "delivered"])
    );
    server.stop().await;
}
