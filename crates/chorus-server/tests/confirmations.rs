//! Human confirmations over real HTTP: request, list, approve or reject, consume once.

mod common;

use common::{ADMIN, ALICE, BOB, TestServer, client, fresh, get_json};
use serde_json::{Value, json};

const ARGS: &str = r#"{"database":"prod"}"#;

async fn post(
    server: &TestServer,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client().post(server.url(path));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("JSON answer"))
}

async fn get(server: &TestServer, path: &str, token: &str) -> (u16, Value) {
    let resp = client()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("request");
    let status = resp.status().as_u16();
    (status, resp.json().await.expect("JSON answer"))
}

/// Alice asks to call `delete_db` with `call_id`; returns the confirmation.
async fn ask(server: &TestServer, call_id: &str) -> Value {
    let body = json!({"agent": "alice", "tool": "delete_db", "call_id": call_id, "arguments": ARGS, "task_id": "t1"});
    let (status, c) = post(server, "/v1/confirmations", Some(ALICE), Some(body)).await;
    assert_eq!(status, 201, "{c}");
    assert_eq!(c["state"], "pending");
    assert_eq!(c["arguments"], ARGS);
    c
}

/// Alice uses the approval `c` for a call with `arguments`; the status and the answer.
async fn consume(server: &TestServer, c: &Value, arguments: &str) -> (u16, Value) {
    let body = json!({ "arguments": arguments });
    post(server, &path(c, "consume"), Some(ALICE), Some(body)).await
}

fn path(c: &Value, action: &str) -> String {
    format!(
        "/v1/confirmations/{}/{action}",
        c["id"].as_str().expect("id")
    )
}

#[tokio::test]
async fn approve_then_consume_once() {
    let (_dir, server) = fresh(30).await;
    let c = ask(&server, "call_1").await;
    let again = post(
        &server,
        "/v1/confirmations",
        Some(ALICE),
        Some(
            json!({"agent": "alice", "tool": "delete_db", "call_id": "call_1", "arguments": ARGS}),
        ),
    )
    .await;
    assert_eq!(again.0, 200, "the same call is recorded once");
    assert_eq!(again.1["id"], c["id"]);

    let (status, pending) = get(&server, "/v1/confirmations?state=pending", ADMIN).await;
    assert_eq!(status, 200);
    let ids: Vec<&Value> = pending["items"]
        .as_array()
        .expect("array")
        .iter()
        .map(|p| &p["id"])
        .collect();
    assert_eq!(ids, vec![&c["id"]]);

    let early = consume(&server, &c, ARGS).await;
    assert_eq!(early.0, 409, "{}", early.1);
    assert_eq!(early.1["error"], "wrong_state");

    let (status, approved) = post(
        &server,
        &path(&c, "approve"),
        Some(ADMIN),
        Some(json!({"note": "checked"})),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["state"], "approved");
    assert_eq!(approved["note"], "checked");
    let (status, none) = get(&server, "/v1/confirmations?state=pending", ADMIN).await;
    assert_eq!(status, 200);
    assert_eq!(none, json!({"items": [], "next": null, "total": 0}));
    let twice = post(&server, &path(&c, "reject"), Some(ADMIN), None).await;
    assert_eq!(twice.0, 409, "deciding twice: {}", twice.1);

    let (status, own) = get(
        &server,
        &format!("/v1/confirmations/{}", c["id"].as_str().unwrap()),
        ALICE,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(own["state"], "approved");

    let (status, used) = consume(&server, &c, ARGS).await;
    assert_eq!(status, 200, "{used}");
    assert_eq!(used["state"], "consumed");
    let (status, second) = consume(&server, &c, ARGS).await;
    assert_eq!(status, 409, "{second}");
    assert!(
        second["message"].as_str().unwrap().contains("already used"),
        "{second}"
    );
    server.stop().await;
}

#[tokio::test]
async fn rejected_calls_never_run() {
    let (_dir, server) = fresh(30).await;
    let c = ask(&server, "call_2").await;
    let (status, rejected) = post(&server, &path(&c, "reject"), Some(ADMIN), None).await;
    assert_eq!(status, 200, "{rejected}");
    assert_eq!(rejected["state"], "rejected");
    assert_eq!(rejected["decided_by"], "admin");
    let (status, refused) = consume(&server, &c, ARGS).await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("refused"),
        "{refused}"
    );
    let approve = post(&server, &path(&c, "approve"), Some(ADMIN), None).await;
    assert_eq!(approve.0, 409, "{}", approve.1);
    server.stop().await;
}

#[tokio::test]
async fn changed_arguments_are_refused() {
    let (_dir, server) = fresh(30).await;
    let c = ask(&server, "call_3").await;
    post(&server, &path(&c, "approve"), Some(ADMIN), None).await;
    let changed = r#"{"database":"prod","cascade":true}"#;
    let (status, refused) = consume(&server, &c, changed).await;
    assert_eq!(status, 422, "{refused}");
    assert_eq!(refused["error"], "arguments_changed");
    let (_, still) = get(
        &server,
        &format!("/v1/confirmations/{}", c["id"].as_str().unwrap()),
        ADMIN,
    )
    .await;
    assert_eq!(
        still["state"], "approved",
        "a refused consume leaves the approval unused"
    );
    server.stop().await;
}

#[tokio::test]
async fn callers_are_checked() {
    let (_dir, server) = fresh(30).await;
    let body =
        json!({"agent": "alice", "tool": "delete_db", "call_id": "call_4", "arguments": ARGS});
    let (status, e) = post(&server, "/v1/confirmations", None, Some(body.clone())).await;
    assert_eq!(status, 401, "{e}");
    let (status, e) = post(&server, "/v1/confirmations", Some(BOB), Some(body.clone())).await;
    assert_eq!(status, 403, "bob cannot ask for alice: {e}");
    assert!(e["message"].as_str().unwrap().contains("/agent"), "{e}");
    let (status, _) = post(&server, "/v1/confirmations", Some(ADMIN), Some(body)).await;
    assert_eq!(status, 403);
    let c = ask(&server, "call_4").await;
    let id = c["id"].as_str().unwrap();
    assert_eq!(
        get(&server, "/v1/confirmations", ALICE).await.0,
        403,
        "only the admin lists"
    );
    assert_eq!(
        get(&server, &format!("/v1/confirmations/{id}"), BOB)
            .await
            .0,
        403
    );
    assert_eq!(
        post(&server, &path(&c, "approve"), Some(ALICE), None)
            .await
            .0,
        403,
        "an agent cannot approve"
    );
    assert_eq!(post(&server, &path(&c, "approve"), None, None).await.0, 401);
    post(&server, &path(&c, "approve"), Some(ADMIN), None).await;
    let (status, e) = post(
        &server,
        &path(&c, "consume"),
        Some(BOB),
        Some(json!({"arguments": ARGS})),
    )
    .await;
    assert_eq!(status, 403, "{e}");
    let (status, e) = get(&server, "/v1/confirmations?state=maybe", ADMIN).await;
    assert_eq!(status, 400, "{e}");
    let (status, _) = get(&server, "/v1/confirmations/nope", ADMIN).await;
    assert_eq!(status, 404);
    let (status, _) = post(
        &server,
        "/v1/confirmations/a%2Fb/approve",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(status, 400, "unsafe ids are refused");
    let (status, e) = post(
        &server,
        &path(&c, "consume"),
        Some(ALICE),
        Some(json!({"args": ARGS})),
    )
    .await;
    assert_eq!(status, 400, "{e}");
    server.stop().await;
}

#[tokio::test]
async fn confirmations_outlive_a_restart_and_appear_in_openapi() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::db(dir.path());
    let config = common::config(30);
    let server = TestServer::start(&db, &config).await;
    let c = ask(&server, "call_5").await;
    let doc: Value = get_json(&server, "/openapi.json", None).await;
    for p in [
        "/v1/confirmations",
        "/v1/confirmations/{id}",
        "/v1/confirmations/{id}/approve",
        "/v1/confirmations/{id}/reject",
        "/v1/confirmations/{id}/consume",
    ] {
        assert!(
            doc["paths"].get(p).is_some(),
            "{p} missing from /openapi.json"
        );
    }
    let states = &doc["components"]["schemas"]["ConfirmationState"]["enum"];
    assert_eq!(
        *states,
        json!(["pending", "approved", "rejected", "consumed"]),
        "the confirmation's states as the JSON spells them"
    );
    let fields = &doc["components"]["schemas"]["Confirmation"]["properties"];
    for field in c.as_object().expect("a confirmation object").keys() {
        assert!(
            fields.get(field).is_some(),
            "{field} missing from Confirmation"
        );
    }
    server.stop().await;
    let server = TestServer::start(&db, &config).await;
    let (status, pending) = get(&server, "/v1/confirmations?state=pending", ADMIN).await;
    assert_eq!(status, 200);
    assert_eq!(pending["items"][0]["id"], c["id"]);
    assert!(dir.path().join("chorus-confirmations.db").exists());
    server.stop().await;
}

/// chorus-agent's HTTP store drives the same API: what a flow run with `--server` uses.
#[tokio::test]
async fn the_agent_http_store_speaks_this_api() {
    use chorus_agent::confirm::{
        ConfirmError, Confirmation, ConfirmationState, Confirmations, HttpConfirmations,
    };
    let (_dir, server) = fresh(30).await;
    let agent = HttpConfirmations::new(server.base.clone(), ALICE);
    let person = HttpConfirmations::new(server.base.clone(), ALICE).with_admin_token(ADMIN);
    let call = Confirmation::pending("alice", "delete_db", "call_h", ARGS, None);
    let c = agent.request(call.clone()).await.unwrap();
    assert_eq!(c.state, ConfirmationState::Pending);
    assert_eq!(agent.request(call).await.unwrap().id, c.id);
    assert!(matches!(
        agent.list(None).await.unwrap_err(),
        ConfirmError::Store(_)
    ));
    let pending = person.list(Some(ConfirmationState::Pending)).await.unwrap();
    assert_eq!(pending.len(), 1);
    let early = agent.consume(&c.id, ARGS).await.unwrap_err();
    assert!(
        matches!(
            early,
            ConfirmError::WrongState {
                state: ConfirmationState::Pending,
                ..
            }
        ),
        "{early}"
    );
    person.decide(&c.id, true, "someone", None).await.unwrap();
    let changed = agent.consume(&c.id, "{}").await.unwrap_err();
    assert!(
        matches!(changed, ConfirmError::ArgumentsChanged(_)),
        "{changed}"
    );
    assert_eq!(
        agent.consume(&c.id, ARGS).await.unwrap().state,
        ConfirmationState::Consumed
    );
    let again = agent.consume(&c.id, ARGS).await.unwrap_err();
    assert!(
        matches!(
            again,
            ConfirmError::WrongState {
                state: ConfirmationState::Consumed,
                ..
            }
        ),
        "{again}"
    );
    assert_eq!(agent.get("conf-missing").await.unwrap(), None);
    assert!(matches!(
        agent.consume("conf-missing", ARGS).await.unwrap_err(),
        ConfirmError::NotFound(_)
    ));
    server.stop().await;
}
