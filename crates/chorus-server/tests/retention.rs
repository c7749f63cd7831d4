//! Retention and paging over real HTTP: with seconds-long retention, the background pruner
//! removes old messages, dead letters, blobs, trace contexts, confirmations and journal records,
//! keeps fresh ones and counts what it removed; listings are walked a page at a time.

mod common;

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chorus_server::telemetry::Traces;
use common::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// How long the test server keeps everything.
const RETENTION_SECS: f64 = 3.0;

/// A handoff from alice to bob of task (and conversation) `task`.
fn handoff(n: u32, task: &str) -> Value {
    let path = format!(
        "{}/../../examples/seeds/003-python-valid-escalation.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut h: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let md = &mut h["metadata"];
    md["message_id"] = format!("00000000-0000-4000-8000-{n:012}").into();
    md["sender_id"] = "alice".into();
    md["recipient_id"] = "bob".into();
    md["task_id"] = task.into();
    md["correlation_id"] = task.into();
    md["expiration_time"] = "2099-01-01T00:00:00.000Z".into();
    h
}

/// The blob path of image bytes.
fn blob_path(bytes: &[u8]) -> String {
    let hex: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("/v1/blobs/sha256-{hex}.png")
}

/// The ids of a page's entries.
fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("a page")
        .iter()
        .map(|e| e["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// One of everything the pruner removes, named by `tag` (`n` numbers its handoff): a message
/// with an image of its own, a handoff with a trace context (both acknowledged by bob), a dead
/// letter, a rejected confirmation and a journal record of alice's task. Returns (blob path, handoff id, confirmation id).
async fn one_of_each(server: &TestServer, tag: &str, n: u32) -> (String, String, String) {
    let image = format!("image {tag}").into_bytes();
    let m = json!({
        "role": "user", "id": format!("m-{tag}"), "name": "alice", "recipient": "bob",
        "metadata": {"session_id": format!("conv-{tag}")},
        "content": [{"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{}", STANDARD.encode(&image))}}]
    });
    assert_eq!(publish(server, ALICE, &m).await.status(), 201);
    let h = handoff(n, &format!("task-{tag}"));
    let traceparent = format!("00-{:032x}-00f067aa0ba902b7-01", n + 1);
    let r = client()
        .post(server.url("/v1/messages"))
        .bearer_auth(ALICE)
        .header("traceparent", traceparent)
        .json(&h)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let mut inbox = SseReader::open(server, "bob", BOB, None).await;
    for _ in 0..2 {
        let (id, _) = delivered(&inbox.next().await);
        assert_eq!(settle(server, "bob", BOB, &id, "ack").await, 204);
    }
    drop(inbox);
    let refused = publish(
        server,
        ALICE,
        &json!({"role": "user", "id": format!("bad-{tag}")}),
    )
    .await;
    assert_eq!(refused.status(), 422);
    let asked = client()
        .post(server.url("/v1/confirmations"))
        .bearer_auth(ALICE)
        .json(&json!({"agent": "alice", "tool": "rm", "call_id": format!("call-{tag}"), "arguments": "{}"}))
        .send()
        .await
        .unwrap();
    let confirmation = asked.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let rejected = client()
        .post(server.url(&format!("/v1/confirmations/{confirmation}/reject")))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(rejected.status(), 200);
    let recorded = client()
        .put(server.url(&format!("/v1/agents/alice/journal/task-{tag}/step-1")))
        .bearer_auth(ALICE)
        .json(&json!({"step": tag}))
        .send()
        .await
        .unwrap();
    assert_eq!(recorded.status(), 201);
    let handoff_id = h["metadata"]["message_id"].as_str().unwrap().to_owned();
    (blob_path(&image), handoff_id, confirmation)
}

/// `chorus_pruned_total` by kind, from the metrics text.
async fn pruned(server: &TestServer) -> Vec<(String, u64)> {
    let text = metrics_text(server).await;
    let mut out: Vec<(String, u64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("chorus_pruned_total{kind=\""))
        .filter_map(|rest| {
            let (kind, value) = rest.split_once("\"} ")?;
            Some((kind.to_owned(), value.trim().parse().ok()?))
        })
        .collect();
    out.sort();
    out
}

async fn status_of(server: &TestServer, path: &str) -> u16 {
    client()
        .get(server.url(path))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pruner_removes_old_entries_of_every_kind_and_keeps_fresh_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.dedupe_window_secs = Some(1);
    config.retention.messages_secs = RETENTION_SECS;
    config.retention.dead_letters_secs = RETENTION_SECS;
    config.retention.traces_secs = RETENTION_SECS;
    config.retention.confirmations_secs = RETENTION_SECS;
    config.retention.records_secs = Some(RETENTION_SECS);
    config.retention.interval_secs = 0.2;
    let server = TestServer::start(&db(dir.path()), &config).await;
    let (old_blob, old_handoff, old_confirmation) = one_of_each(&server, "old", 1).await;
    assert_eq!(status_of(&server, &old_blob).await, 200);

    let want: Vec<(String, u64)> = [
        ("blobs", 1),
        ("confirmations", 1),
        ("dead_letters", 1),
        ("messages", 2),
        // The journal record, and the sent and acked events of the two messages' histories.
        ("records", 5),
        ("traces", 1),
    ]
    .map(|(k, n)| (k.to_owned(), n))
    .to_vec();
    let deadline = Instant::now() + Duration::from_secs(20);
    while pruned(&server).await != want {
        assert!(
            Instant::now() < deadline,
            "not pruned: {:?}",
            pruned(&server).await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let (fresh_blob, fresh_handoff, fresh_confirmation) = one_of_each(&server, "fresh", 2).await;
    // Several runs of the pruner, well within the retention of the fresh entries.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(pruned(&server).await, want, "nothing fresh was pruned");

    let letters = get_json(&server, "/v1/dead-letters", Some(ADMIN)).await;
    assert_eq!(letters["total"], 1);
    assert_eq!(letters["items"][0]["message_id"], "bad-fresh");
    assert_eq!(
        ids(&get_json(&server, "/v1/tasks", Some(ADMIN)).await),
        ["task-fresh"]
    );
    let mut conversations = ids(&get_json(&server, "/v1/conversations", Some(ADMIN)).await);
    conversations.sort();
    assert_eq!(conversations, ["conv-fresh", "task-fresh"]);
    assert_eq!(status_of(&server, &old_blob).await, 404);
    assert_eq!(status_of(&server, &fresh_blob).await, 200);
    let confirmation = |id: &str| format!("/v1/confirmations/{id}");
    assert_eq!(
        status_of(&server, &confirmation(&old_confirmation)).await,
        404
    );
    assert_eq!(
        status_of(&server, &confirmation(&fresh_confirmation)).await,
        200
    );
    let journal = |tag: &str| format!("/v1/agents/alice/journal/task-{tag}");
    let old_journal = get_json(&server, &journal("old"), Some(ADMIN)).await;
    assert_eq!(old_journal["records"], json!([]), "{old_journal}");
    let fresh_journal = get_json(&server, &journal("fresh"), Some(ADMIN)).await;
    assert_eq!(fresh_journal["records"][0]["record"]["step"], "fresh");
    let history = |id: &str| format!("/v1/deliveries?message_id={id}");
    let old_history = get_json(&server, &history(&old_handoff), Some(ADMIN)).await;
    assert_eq!(
        old_history["items"][0]["events"],
        json!([]),
        "{old_history}"
    );
    let fresh_history = get_json(&server, &history(&fresh_handoff), Some(ADMIN)).await;
    assert_eq!(fresh_history["items"][0]["events"][1]["step"], "acked");
    let traces = Traces::open(&dir.path().join("chorus-confirmations.db")).unwrap();
    assert_eq!(traces.of_message(&old_handoff).await.unwrap(), None);
    assert!(traces.of_message(&fresh_handoff).await.unwrap().is_some());
    server.stop().await;
}

/// Walks a listing at `path` (which has a query already) two entries at a time; returns the
/// ids in order and the page sizes.
async fn walk(server: &TestServer, path: &str) -> (Vec<String>, Vec<usize>) {
    let (mut seen, mut sizes) = (Vec::new(), Vec::new());
    let mut after: Option<String> = None;
    loop {
        let page_path = match &after {
            Some(a) => format!("{path}&after={}", urlencode(a)),
            None => path.to_owned(),
        };
        let page = get_json(server, &page_path, Some(ADMIN)).await;
        sizes.push(page["items"].as_array().expect("a page").len());
        seen.extend(ids(&page));
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return (seen, sizes),
        }
        assert!(sizes.len() < 20, "the pages never end");
    }
}

/// Percent-encodes a query value.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn listings_are_walked_two_at_a_time_each_entry_once() {
    let (_dir, server) = fresh(30).await;
    for i in 0..5 {
        let refused = publish(
            &server,
            ALICE,
            &json!({"role": "user", "id": format!("bad-{i}")}),
        )
        .await;
        assert_eq!(refused.status(), 422);
    }
    let (letters, sizes) = walk(&server, "/v1/dead-letters?limit=2").await;
    assert_eq!(sizes, [2, 2, 1]);
    let mut unique = letters.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 5, "each dead letter once: {letters:?}");
    let all = get_json(&server, "/v1/dead-letters?limit=1000", Some(ADMIN)).await;
    assert_eq!(ids(&all), letters, "in the order of one big page");
    assert_eq!(all["total"], 5);

    for n in 0..5 {
        let h = handoff(10 + n, "task-paged");
        assert_eq!(publish(&server, ALICE, &h).await.status(), 201);
    }
    let (messages, sizes) = walk(&server, "/v1/tasks/task-paged/messages?limit=2").await;
    assert_eq!(sizes, [2, 2, 1]);
    let sent: Vec<String> = (0..5)
        .map(|n| format!("00000000-0000-4000-8000-{:012}", 10 + n))
        .collect();
    assert_eq!(messages, sent, "in publish order, each once");
    let (entries, _) = walk(&server, "/v1/conversations/task-paged/messages?limit=2").await;
    assert_eq!(entries, sent);

    for i in 0..3 {
        let asked = client()
            .post(server.url("/v1/confirmations"))
            .bearer_auth(ALICE)
            .json(&json!({"agent": "alice", "tool": "rm", "call_id": format!("c{i}"), "arguments": "{}"}))
            .send()
            .await
            .unwrap();
        assert_eq!(asked.status(), 201);
    }
    let (confirmations, sizes) = walk(&server, "/v1/confirmations?state=pending&limit=2").await;
    assert_eq!((confirmations.len(), sizes), (3, vec![2, 1]));

    for bad in [
        "/v1/dead-letters?after=yesterday",
        "/v1/tasks?after=no-colon",
        "/v1/confirmations?after=no-colon",
    ] {
        let r = client()
            .get(server.url(bad))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"], "bad_cursor", "{bad}: {body}");
    }
    server.stop().await;
}
