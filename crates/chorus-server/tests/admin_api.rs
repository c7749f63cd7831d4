//! Admin endpoints over real HTTP: dead letters with replay, task and conversation timelines.

mod common;

use common::*;
use serde_json::Value;

async fn admin_get(server: &TestServer, path: &str, token: &str) -> (u16, Value) {
    let r = client()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

const H1: &str = "00000000-0000-4000-8000-000000000001";
const H2: &str = "00000000-0000-4000-8000-000000000002";

fn seed_handoff(name: &str, id: &str) -> Value {
    let path = format!("{}/../../examples/seeds/{name}", env!("CARGO_MANIFEST_DIR"));
    let mut handoff: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    handoff["metadata"]["sender_id"] = "alice".into();
    handoff["metadata"]["recipient_id"] = "bob".into();
    handoff["metadata"]["message_id"] = id.into();
    handoff
}

/// A nack of a delivery's last attempt makes it a dead letter before the nack is answered, with
/// no stream reading the inbox: before, it went back to the queue and became a dead letter only
/// when a stream fetched it again.
#[tokio::test]
async fn the_last_attempts_nack_is_a_dead_letter_at_once() {
    let (_dir, server) = fresh(30).await;
    publish(&server, ALICE, &message("last", "alice", "bob", "x")).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    for attempt in 1..5 {
        assert_eq!(delivered(&inbox.next().await), ("last".into(), attempt));
        assert_eq!(settle(&server, "bob", BOB, "last", "nack").await, 204);
    }
    assert_eq!(delivered(&inbox.next().await), ("last".into(), 5));
    drop(inbox);
    assert_eq!(settle(&server, "bob", BOB, "last", "nack").await, 204);
    let (status, letters) = admin_get(&server, "/v1/dead-letters", ADMIN).await;
    assert_eq!(status, 200);
    assert_eq!(letters["total"], 1, "{letters}");
    assert_eq!(letters["items"][0]["message_id"], "last");
    assert_eq!(letters["items"][0]["reason"]["kind"], "max_deliver");
    assert_eq!(letters["items"][0]["reason"]["attempts"], 5, "{letters}");
    server.stop().await;
}

#[tokio::test]
async fn a_message_nacked_past_max_deliver_is_a_dead_letter_and_replays() {
    let (_dir, server) = fresh(30).await;
    publish(&server, ALICE, &message("hot-potato", "alice", "bob", "x")).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    nack_past_max_deliver(&server, &mut inbox, ("bob", BOB), "hot-potato").await;
    let letters = loop {
        let (status, letters) = admin_get(&server, "/v1/dead-letters", ADMIN).await;
        assert_eq!(status, 200);
        if !letters["items"].as_array().unwrap().is_empty() {
            break letters;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(letters["total"], 1);
    let letter = &letters["items"][0];
    assert_eq!(letter["message_id"], "hot-potato");
    assert_eq!(letter["queue"], "bob");
    assert_eq!(letter["reason"]["kind"], "max_deliver");
    assert_eq!(
        letter["message"],
        message("hot-potato", "alice", "bob", "x")
    );

    let (status, _) = admin_get(&server, "/v1/dead-letters", BOB).await;
    assert_eq!(status, 403, "agents do not see dead letters");
    let id = letter["id"].as_str().unwrap();
    let replay = |token: &'static str, id: String| {
        client()
            .post(server.url(&format!("/v1/dead-letters/{id}/replay")))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(replay(BOB, id.to_owned()).await.unwrap().status(), 403);
    let r = replay(ADMIN, id.to_owned()).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap()["queues"],
        serde_json::json!(["bob"])
    );
    assert_eq!(delivered(&inbox.next().await), ("hot-potato".into(), 1));
    assert_eq!(
        replay(ADMIN, id.to_owned()).await.unwrap().status(),
        404,
        "replayed once"
    );
    let (_, letters) = admin_get(&server, "/v1/dead-letters", ADMIN).await;
    assert_eq!(letters["items"], serde_json::json!([]));
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn a_dead_letter_can_be_deleted_and_is_never_delivered_again() {
    let (_dir, server) = fresh(30).await;
    publish(&server, ALICE, &message("doomed", "alice", "bob", "x")).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    nack_past_max_deliver(&server, &mut inbox, ("bob", BOB), "doomed").await;
    let id = loop {
        let (_, letters) = admin_get(&server, "/v1/dead-letters", ADMIN).await;
        if let Some(id) = letters["items"][0]["id"].as_str() {
            break id.to_owned();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let delete = |token: &'static str, id: String| {
        client()
            .delete(server.url(&format!("/v1/dead-letters/{id}")))
            .bearer_auth(token)
            .send()
    };
    assert_eq!(delete(BOB, id.clone()).await.unwrap().status(), 403);
    assert_eq!(delete(ADMIN, id.clone()).await.unwrap().status(), 204);
    assert_eq!(delete(ADMIN, id.clone()).await.unwrap().status(), 404);
    let (_, letters) = admin_get(&server, "/v1/dead-letters", ADMIN).await;
    assert_eq!(
        (&letters["items"], &letters["total"]),
        (&serde_json::json!([]), &serde_json::json!(0))
    );
    // Neither this stream nor a new one is handed the dead message again.
    assert!(
        inbox
            .next_within(std::time::Duration::from_millis(300))
            .await
            .is_none()
    );
    drop(inbox);
    let mut again = SseReader::open(&server, "bob", BOB, None).await;
    assert!(
        again
            .next_within(std::time::Duration::from_millis(300))
            .await
            .is_none()
    );
    server.stop().await;
}

#[tokio::test]
async fn task_and_conversation_timelines() {
    let (_dir, server) = fresh(30).await;
    for id in [H1, H2] {
        let handoff = seed_handoff("003-python-valid-escalation.json", id);
        let r = publish(&server, ALICE, &handoff).await;
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }
    let (status, task) = admin_get(&server, "/v1/tasks/task-abc-456/messages", ADMIN).await;
    assert_eq!(status, 200);
    assert_eq!((&task["total"], &task["next"]), (&2.into(), &Value::Null));
    let task = &task["items"];
    let ids: Vec<&str> = task
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [H1, H2]);
    assert_eq!(task[0]["handoff_type"], "ESCALATION");
    assert_eq!(task[0]["priority"], "HIGH");
    assert_eq!(task[0]["sender"], "alice");
    assert_eq!(task[0]["message"]["payload"]["handoff_type"], "ESCALATION");

    let (status, page) = admin_get(
        &server,
        "/v1/conversations/flow-xyz-123/messages?after=1",
        ADMIN,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(page["next"], Value::Null, "the last page");
    let page = &page["items"];
    assert_eq!(page.as_array().unwrap().len(), 1);
    assert_eq!(
        (page[0]["seq"].as_u64(), page[0]["id"].as_str()),
        (Some(2), Some(H2))
    );

    let (status, _) = admin_get(&server, "/v1/tasks/task-abc-456/messages", ALICE).await;
    assert_eq!(status, 403, "timelines need the admin token");
    server.stop().await;
}

#[tokio::test]
async fn configured_fields_are_redacted_before_they_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.redact.pointers = vec!["/payload/data/customer_info/name".into()];
    config.redact.patterns = vec!["email".into(), "phone".into()];
    let server = TestServer::start(&db(dir.path()), &config).await;
    let mut handoff = seed_handoff("003-python-valid-escalation.json", H1);
    handoff["payload"]["data"]["customer_info"]["user_id"] = "john.doe@example.com".into();
    let r = publish(&server, ALICE, &handoff).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());

    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let received = inbox.next().await.json();
    let (_, task) = admin_get(&server, "/v1/tasks/task-abc-456/messages", ADMIN).await;
    for stored in [&received["message"], &task["items"][0]["message"]] {
        let customer = &stored["payload"]["data"]["customer_info"];
        assert_eq!(customer["user_id"], "[REDACTED:email]");
        assert_eq!(customer["contact_number"], "[REDACTED:phone]");
        assert_eq!(customer["name"], "[REDACTED]");
        assert_eq!(
            stored["metadata"]["timestamp"],
            handoff["metadata"]["timestamp"]
        );
    }
    drop(inbox);
    server.stop().await;
}

#[tokio::test]
async fn a_redaction_rule_that_would_rewrite_a_routing_key_refuses_the_message_and_stores_nothing()
{
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    // Matches the recipient's id and nothing else of the handoff: redacted after the checks,
    // the message would be routed to `[REDACTED:pattern]`, which no check ever saw.
    config.redact.patterns = vec!["^bob$".into()];
    let server = TestServer::start(&db(dir.path()), &config).await;
    let handoff = seed_handoff("003-python-valid-escalation.json", H1);
    let r = publish(&server, ALICE, &handoff).await;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["issues"][0]["pointer"], "/metadata/recipient_id",
        "{body}"
    );
    assert!(
        body["issues"][0]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("[redact]")),
        "{body}"
    );
    let (_, task) = admin_get(&server, "/v1/tasks/task-abc-456/messages", ADMIN).await;
    assert_eq!(
        task["items"],
        serde_json::json!([]),
        "nothing stored: {task}"
    );
    let (_, dead) = admin_get(&server, "/v1/dead-letters", ADMIN).await;
    assert_eq!(
        dead["items"],
        serde_json::json!([]),
        "no dead letter: {dead}"
    );
    server.stop().await;
}

/// Unix milliseconds by the test's clock.
fn wall_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[tokio::test]
async fn timelines_and_search_give_the_hub_publish_time_and_find_a_message_by_id() {
    let (_dir, server) = fresh(30).await;
    let before = wall_ms();
    for id in [H1, H2] {
        let mut handoff = seed_handoff("003-python-valid-escalation.json", id);
        // The sender's own time, far from the publish: not what the hub reports.
        handoff["metadata"]["timestamp"] = "2001-02-03T04:05:06Z".into();
        let r = publish(&server, ALICE, &handoff).await;
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    }
    let after = wall_ms();
    let (status, task) = admin_get(&server, "/v1/tasks/task-abc-456/messages", ADMIN).await;
    assert_eq!(status, 200);
    let times: Vec<i64> = task["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["published_ms"].as_i64().expect("a publish time"))
        .collect();
    assert_eq!(times.len(), 2);
    assert!(
        times.iter().all(|t| (before..=after).contains(t)),
        "{times:?}"
    );
    assert!(times[0] <= times[1], "{times:?}");

    let (status, found) = admin_get(&server, &format!("/v1/search?q={H1}"), ADMIN).await;
    assert_eq!(status, 200, "{found}");
    let message = &found["message"];
    assert_eq!(message["id"], H1, "{found}");
    assert_eq!(message["published_ms"].as_i64(), Some(times[0]));
    assert_eq!(message["handoff_type"], "ESCALATION");
    assert_eq!(message["message"]["metadata"]["task_id"], "task-abc-456");
    assert_eq!(
        found["dead_letters"],
        serde_json::json!([]),
        "not a dead letter"
    );

    let (_, nothing) = admin_get(
        &server,
        "/v1/search?q=00000000-0000-4000-8000-00000000dead",
        ADMIN,
    )
    .await;
    assert_eq!(nothing["message"], Value::Null, "{nothing}");
    server.stop().await;
}

/// The dead letters of some message ids, read through the store's index: exactly those the
/// deliveries of the ids asked became (each once however often it is named; a document refused
/// on publish under an id is not among them), all in one answer; a bad list is 400.
#[tokio::test]
async fn dead_letters_are_found_by_message_id_without_reading_the_rest() {
    let (_dir, server) = fresh(30).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    for i in 0..3 {
        let id = format!("hot-{i}");
        let r = publish(&server, ALICE, &message(&id, "alice", "bob", "x")).await;
        assert_eq!(r.status(), 201);
        nack_past_max_deliver(&server, &mut inbox, ("bob", BOB), &id).await;
    }
    let mut refused = message("ghost", "alice", "bob", "x");
    refused["role"] = "tool".into();
    assert_eq!(publish(&server, ALICE, &refused).await.status(), 422);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while admin_get(&server, "/v1/dead-letters", ADMIN).await.1["total"] != 4 {
        assert!(std::time::Instant::now() < deadline, "four dead letters");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (status, some) = admin_get(
        &server,
        "/v1/dead-letters?message_id=hot-2,hot-0,hot-2,never-sent,ghost",
        ADMIN,
    )
    .await;
    assert_eq!(status, 200, "{some}");
    let ids: Vec<&str> = some["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["hot-0", "hot-2"], "oldest first, each once: {some}");
    assert_eq!(some["items"][0]["queue"], "bob");
    assert_eq!(some["total"], 2);
    assert_eq!(some["next"], Value::Null);
    let many = (0..101)
        .map(|i| format!("m{i}"))
        .collect::<Vec<_>>()
        .join(",");
    for bad in [
        "/v1/dead-letters?message_id=hot-1&limit=10".to_owned(),
        "/v1/dead-letters?message_id=hot-1&after=1".to_owned(),
        "/v1/dead-letters?message_id=a%2Fb".to_owned(),
        "/v1/dead-letters?message_id=".to_owned(),
        format!("/v1/dead-letters?message_id={many}"),
    ] {
        let (status, body) = admin_get(&server, &bad, ADMIN).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    let (status, _) = admin_get(&server, "/v1/dead-letters?message_id=hot-1", BOB).await;
    assert_eq!(status, 403, "agents do not see dead letters");
    drop(inbox);
    server.stop().await;
}
