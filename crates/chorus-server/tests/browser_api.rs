//! What the web UI reads, over real HTTP without a browser: its files (no token needed, a
//! strict content policy), the task and conversation listings, the live change stream.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

fn handoff(n: u32, task: &str) -> Value {
    let path = format!(
        "{}/../../examples/seeds/003-python-valid-escalation.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut h: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    h["metadata"]["message_id"] = format!("00000000-0000-4000-8000-{n:012}").into();
    h["metadata"]["sender_id"] = "alice".into();
    h["metadata"]["recipient_id"] = "bob".into();
    h["metadata"]["task_id"] = task.into();
    h["metadata"]["correlation_id"] = format!("conv-{task}").into();
    h
}

async fn get(server: &TestServer, path: &str, token: Option<&str>) -> reqwest::Response {
    let mut r = client().get(server.url(path));
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    r.send().await.unwrap()
}

#[tokio::test]
async fn the_page_and_its_files_load_without_a_token_under_a_strict_policy() {
    let (_dir, server) = fresh(30).await;
    let page = get(&server, "/", None).await;
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("default-src 'none'"),
        "{csp}"
    );
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    let html = page.text().await.unwrap();
    for (path, media_type) in [
        ("/ui/app.js", "text/javascript; charset=utf-8"),
        ("/ui/views.js", "text/javascript; charset=utf-8"),
        ("/ui/story.js", "text/javascript; charset=utf-8"),
        ("/ui/app.css", "text/css; charset=utf-8"),
    ] {
        assert!(
            html.contains(&format!("\"{path}\"")),
            "the page loads {path}"
        );
        let r = get(&server, path, None).await;
        assert_eq!(
            (
                r.status().as_u16(),
                r.headers()["content-type"].to_str().unwrap()
            ),
            (200, media_type)
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    }
    assert!(
        !html.contains("<script>"),
        "no inline script: the policy would block it"
    );
    assert_eq!(get(&server, "/ui/nope.js", None).await.status(), 404);
    // The data schemas the task page labels payloads with, by handoff type, with no token.
    let schemas = get(&server, "/ui/handoff-data.json", None).await;
    assert_eq!(schemas.headers()["content-type"], "application/json");
    let schemas: serde_json::Value = schemas.json().await.unwrap();
    let escalation = &schemas["ESCALATION"]["properties"];
    let keys: Vec<&String> = escalation.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "issue_category",
            "severity",
            "customer_info",
            "technical_details"
        ]
    );
    assert_eq!(schemas.as_object().unwrap().len(), 7);
    // No trace viewer configured: trace ids are not links.
    let settings: Value = get(&server, "/ui/settings.json", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(settings, json!({"trace_url": null}));
    server.stop().await;
}

#[tokio::test]
async fn tasks_and_conversations_are_listed_most_recent_first() {
    let (_dir, server) = fresh(30).await;
    for (n, task) in [(1, "task-a"), (2, "task-b"), (3, "task-a")] {
        assert_eq!(
            publish(&server, ALICE, &handoff(n, task)).await.status(),
            201
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let tasks: Value = get(&server, "/v1/tasks", Some(ADMIN))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(tasks["total"], 2);
    let tasks = &tasks["items"];
    let ids: Vec<_> = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_str().unwrap(), t["messages"].as_u64().unwrap()))
        .collect();
    assert_eq!(ids, [("task-a", 2), ("task-b", 1)]);
    assert!(tasks[0]["first_ms"].as_i64().unwrap() < tasks[0]["last_ms"].as_i64().unwrap());
    let convs: Value = get(&server, "/v1/conversations?limit=1", Some(ADMIN))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(convs["items"].as_array().unwrap().len(), 1);
    assert_eq!(convs["items"][0]["id"], "conv-task-a");
    let rest: Value = get(
        &server,
        &format!(
            "/v1/conversations?limit=1&after={}",
            convs["next"].as_str().expect("a second page")
        ),
        Some(ADMIN),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(rest["items"][0]["id"], "conv-task-b");
    assert_eq!(rest["next"], Value::Null, "two conversations, two pages");

    assert_eq!(get(&server, "/v1/tasks", None).await.status(), 401);
    assert_eq!(get(&server, "/v1/tasks", Some(ALICE)).await.status(), 403);
    let bad = get(&server, "/v1/conversations?limit=many", Some(ADMIN)).await;
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.unwrap()["error"], "bad_query");
    server.stop().await;
}

/// The next `change` event's data on an open event stream, within `wait`.
async fn next_change(stream: &mut chorus_agent::sse::SseReader, wait: Duration) -> Option<Value> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let event = tokio::time::timeout_at(deadline, stream.next())
            .await
            .ok()??
            .expect("read");
        if event.event == "change" {
            return Some(serde_json::from_str(&event.data).expect("JSON data"));
        }
    }
}

#[tokio::test]
async fn the_event_stream_tells_the_admin_what_changed() {
    let (_dir, server) = fresh(30).await;
    assert_eq!(get(&server, "/v1/events", None).await.status(), 401);
    assert_eq!(get(&server, "/v1/events", Some(BOB)).await.status(), 403);
    let stream = get(&server, "/v1/events", Some(ADMIN)).await;
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    let mut stream = chorus_agent::sse::SseReader::response(stream, None);

    assert_eq!(
        publish(&server, ALICE, &message("m1", "alice", "bob", "hi"))
            .await
            .status(),
        201
    );
    let change = next_change(&mut stream, PATIENCE).await.expect("a change");
    assert_eq!(change, json!({"kind": "published", "path": "/v1/messages"}));

    assert_eq!(
        publish(&server, ALICE, &message("m1", "alice", "bob", "hi"))
            .await
            .status(),
        200
    );
    let mut no_recipient = message("m2", "alice", "bob", "x");
    no_recipient.as_object_mut().unwrap().remove("recipient");
    assert_eq!(publish(&server, ALICE, &no_recipient).await.status(), 422);
    let change = next_change(&mut stream, PATIENCE).await.expect("a change");
    assert_eq!(
        change,
        json!({"kind": "dead_lettered", "path": "/v1/dead-letters"}),
        "a duplicate changes nothing; a refusal kept is a dead letter"
    );

    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    assert_eq!(delivered(&inbox.next().await), ("m1".into(), 1));
    assert_eq!(settle(&server, "bob", BOB, "m1", "ack").await, 204);
    let change = next_change(&mut stream, PATIENCE).await.expect("a change");
    assert_eq!(
        change,
        json!({"kind": "acked", "path": "/v1/agents/bob/inbox/m1/ack"})
    );
    assert_eq!(
        next_change(&mut stream, Duration::from_millis(1500)).await,
        None,
        "nothing else changed"
    );

    let doc: Value = get(&server, "/openapi.json", None)
        .await
        .json()
        .await
        .unwrap();
    for path in ["/v1/events", "/v1/tasks", "/v1/conversations"] {
        assert!(doc["paths"][path]["get"].is_object(), "{path} documented");
    }
    drop(inbox);
    drop(stream);
    server.stop().await;
}
