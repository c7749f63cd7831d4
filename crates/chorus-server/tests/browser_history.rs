//! The delivery history of a pool message whose first holder was killed, as a person sees it on
//! the task page in headless chromium: two attempts, two readers, the hand-back to the store,
//! the ack and its time; the graph draws the pool as the place the replicas took work from.
//! Screenshots light and dark. Set CHORUS_TEST_BROWSER to fail without chromium.

mod common;
mod webdriver;

use std::time::Duration;

use chorus_server::{AgentEntry, hash_token};
use common::*;
use serde_json::{Value, json};

const POOL: &str = "specialist_pool";
const TASK: &str = "task-pool-7";
const MESSAGE: &str = "00000000-0000-4000-8000-0000000000a7";
const REPLICAS: [(&str, &str); 2] = [
    ("specialist-1", "specialist-1-token"),
    ("specialist-2", "specialist-2-token"),
];

/// alice (triage) sends to the pool; two replicas of the specialist read it.
async fn pool_server(dir: &std::path::Path) -> TestServer {
    let mut c = config(30);
    c.hand_back_ms = 200;
    for (id, token) in REPLICAS {
        let mut entry = AgentEntry::with_token_hash(hash_token(token));
        entry.read = vec![POOL.into()];
        c.agents.insert(id.into(), entry);
    }
    TestServer::start(&db(dir), &c).await
}

/// A triage escalation of the task to the pool.
fn escalation() -> Value {
    json!({
        "metadata": {"message_id": MESSAGE, "timestamp": "2026-12-03T10:00:00Z",
            "protocol_version": "1.0.0", "sender_id": "alice", "recipient_id": POOL,
            "task_id": TASK, "priority": "HIGH"},
        "context": {"workflow_state": "TRIAGED", "previous_actions": [],
            "historical_data_summary": "A customer cannot connect."},
        "payload": {"handoff_type": "ESCALATION", "data": {
            "issue_category": "NETWORK", "severity": "HIGH",
            "customer_info": {"user_id": "customer-4711", "name": "Ann"},
            "technical_details": {"isp": "GlobalNet"}}},
        "instructions": {}
    })
}

/// The message's history once it has `n` events (it is written in the background).
async fn history(server: &TestServer, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let path = format!("/v1/deliveries?message_id={MESSAGE}");
        let body = get_json(server, &path, Some(ADMIN)).await;
        let events = body["items"][0]["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if events.len() >= n {
            return events;
        }
        assert!(std::time::Instant::now() < deadline, "history: {events:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Unix milliseconds as the page writes times.
fn shown_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("a time")
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

#[tokio::test]
async fn the_task_page_shows_the_history_of_a_pool_message_whose_first_holder_died() {
    let Some(browser) = webdriver::Browser::launch().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("folder");
    let server = pool_server(dir.path()).await;
    let published = publish(&server, ALICE, &escalation()).await;
    assert_eq!(
        published.status(),
        201,
        "{}",
        published.text().await.unwrap_or_default()
    );

    // The first replica takes it and is killed: its connection drops with the message unacked.
    let mut first = SseReader::open(&server, POOL, REPLICAS[0].1, None).await;
    assert_eq!(delivered(&first.next().await), (MESSAGE.to_owned(), 1));
    drop(first);
    tokio::time::sleep(Duration::from_millis(600)).await;
    // The second replica gets it again, as attempt 2, and acknowledges it.
    let mut second = SseReader::open(&server, POOL, REPLICAS[1].1, None).await;
    assert_eq!(delivered(&second.next().await), (MESSAGE.to_owned(), 2));
    assert_eq!(
        settle(&server, POOL, REPLICAS[1].1, MESSAGE, "ack").await,
        204
    );
    let events = history(&server, 4).await;
    let acked_at = events[3]["at_ms"].as_i64().expect("the ack's time");
    assert_eq!(events[3]["step"], "acked", "{events:?}");
    let stream = events[0]["stream"].as_u64().expect("the first stream");

    browser.sign_in(&server.base, ADMIN).await;
    browser.goto(&server.url(&format!("/#/task/{TASK}"))).await;
    let copy = format!("li.delivery[data-queue='{POOL}']");
    browser.shown(&copy, "acknowledged").await;
    browser
        .shown(
            &format!("{copy} details.history summary"),
            "history: 2 attempts, 2 readers",
        )
        .await;
    let event = |attempt: u32, step: &str| {
        format!("{copy} li.event[data-attempt='{attempt}'][data-step='{step}']")
    };
    browser
        .shown(
            &event(1, "sent"),
            &format!("attempt 1 · sent to specialist-1 (stream {stream})"),
        )
        .await;
    browser
        .shown(
            &event(1, "handed_back"),
            &format!("handed back to the store: stream {stream} of specialist-1 closed and no other stream took it"),
        )
        .await;
    browser
        .shown(&event(2, "sent"), "attempt 2 · sent to specialist-2")
        .await;
    browser
        .shown(
            &event(2, "acked"),
            &format!(
                "attempt 2 · acknowledged by specialist-2 · {}",
                shown_time(acked_at)
            ),
        )
        .await;
    assert_eq!(
        browser.count(&format!("{copy} li.event")).await,
        4,
        "four events, in order"
    );
    let order = browser.texts(&format!("{copy} li.event")).await;
    assert!(
        order[0].contains("sent to specialist-1") && order[3].contains("acknowledged"),
        "{order:?}"
    );

    // The graph: alice → the pool, and the pool as where both replicas took the message from.
    browser
        .shown("ul.edges", "alice → specialist_pool ×1")
        .await;
    browser
        .shown("ul.edges", "specialist-1 took ×1 from specialist_pool")
        .await;
    browser
        .shown("ul.edges", "specialist-2 took ×1 from specialist_pool")
        .await;
    assert_eq!(
        browser
            .count(&format!("svg.graph g.edge.take[data-from='{POOL}']"))
            .await,
        2
    );
    assert_eq!(
        browser
            .count(&format!("svg.graph g.node.pool[data-name='{POOL}']"))
            .await,
        1
    );

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    browser.screenshot(&shots.join("history-light.png")).await;
    browser.color_scheme("dark").await;
    let background = "return getComputedStyle(document.body).backgroundColor";
    assert_eq!(browser.run(background).await, json!("rgb(20, 23, 29)"));
    browser.screenshot(&shots.join("history-dark.png")).await;
    eprintln!("screenshots in {}", shots.display());
    drop(second);
    drop(browser);
    server.stop().await;
}
