//! The task page tells the story of seed 003's chain, as a person sees it in headless chromium:
//! each handoff with the time the hub accepted it, sender → recipient, payload fields labelled by the type's data
//! schema, context (state, previous actions in time order, summary), instructions, and where each
//! copy stands (acknowledged, waiting, dead-lettered, expired, from the dead letters of the
//! page's ids alone); a refused handoff of the task, found when asked for; usage "not
//! reported". Set CHORUS_TEST_BROWSER to fail without chromium.

mod common;
mod webdriver;

use std::time::Duration;

use chorus_server::TRACE_URL_VAR;
use chorus_server::{AgentEntry, hash_token};
use common::*;
use serde_json::{Value, json};

const CS: &str = "customer-service-token-for-tests";
const TS: &str = "technical-support-token-for-tests";
const CS_ID: &str = "customer_service_agent_001";
const TS_ID: &str = "technical_support_agent_001";
const POOL: &str = "technical_support_agent_pool";
const TASK: &str = "task-abc-456";
/// The W3C trace context the escalation is published in.
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// The escalation, acknowledged.
const ESC: &str = "00000000-0000-4000-8000-00000000e5c1";
/// The request for information, waiting.
const ASK: &str = "00000000-0000-4000-8000-00000000a5c1";
/// The status update, waiting.
const STATUS: &str = "00000000-0000-4000-8000-0000000057a1";
/// The escalation that expires in the pool.
const LATE: &str = "00000000-0000-4000-8000-00000000e5c2";
/// The notification dead-lettered after max_deliver.
const NOTE: &str = "00000000-0000-4000-8000-0000000000c1";
/// The escalation refused on publish.
const BAD: &str = "00000000-0000-4000-8000-00000000e5c3";

/// A server whose agents are seed 003's: customer service, and a technical support worker
/// reading the pool.
async fn seed_server(dir: &std::path::Path) -> TestServer {
    let mut c = config(30);
    c.agents
        .insert(CS_ID.into(), AgentEntry::with_token_hash(hash_token(CS)));
    let mut ts = AgentEntry::with_token_hash(hash_token(TS));
    ts.read = vec![POOL.into()];
    c.agents.insert(TS_ID.into(), ts);
    TestServer::start(&db(dir), &c).await
}

/// Seed 003's escalation with id `id` in the task, its previous actions listed newest first
/// (the page must put them in time order) and a symptom long enough to be folded.
fn escalation(id: &str) -> Value {
    let path = format!(
        "{}/../../examples/seeds/003-escalation.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut h: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("seed")).expect("seed JSON");
    h["metadata"]["message_id"] = id.into();
    h["context"]["previous_actions"]
        .as_array_mut()
        .expect("actions")
        .reverse();
    h["payload"]["data"]["technical_details"]["symptoms"] =
        "Intermittent disconnections every hour; ".repeat(8).into();
    h
}

/// A handoff of the task from technical support back to customer service.
fn answer(id: &str, handoff_type: &str, data: Value, at: &str) -> Value {
    json!({
        "metadata": {"message_id": id, "timestamp": at, "protocol_version": "1.0.0",
            "sender_id": TS_ID, "recipient_id": CS_ID, "task_id": TASK,
            "correlation_id": "flow-xyz-123", "priority": "MEDIUM"},
        "context": {"workflow_state": "DIAGNOSIS_IN_PROGRESS",
            "previous_actions": [{"action_type": "LOG_REVIEW", "details": "Read log_file_id_123.", "timestamp": at}],
            "historical_data_summary": "Escalated; the logs show DHCP lease drops."},
        "payload": {"handoff_type": handoff_type, "data": data},
        "instructions": {}
    })
}

/// Opens `agent`'s inbox stream and waits `wait` for deliveries: what came (the bus dead-letters
/// expired messages at this moment).
async fn read_for(server: &TestServer, agent: &str, token: &str, wait: Duration) -> Vec<String> {
    let mut inbox = SseReader::open(server, agent, token, None).await;
    let mut seen = Vec::new();
    while let Some(event) = inbox.next_within(wait).await {
        seen.push(delivered(&event).0);
    }
    seen
}

#[tokio::test]
async fn the_task_page_tells_the_story_of_the_seed_003_chain() {
    let started = chrono::Utc::now();
    // Trace ids become links to this viewer (read by the server at each request; the only test
    // of this binary, set before its server starts).
    unsafe { std::env::set_var(TRACE_URL_VAR, "http://127.0.0.1:16686/trace/{trace_id}") };
    let Some(browser) = webdriver::Browser::launch().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("folder");
    let server = seed_server(dir.path()).await;
    let ok = |r: reqwest::Response| async move {
        let status = r.status();
        assert_eq!(status, 201, "{}", r.text().await.unwrap_or_default());
    };

    // The escalation, in a trace, received and acknowledged by technical support.
    let traced = client()
        .post(server.url("/v1/messages"))
        .bearer_auth(CS)
        .header("traceparent", TRACEPARENT)
        .json(&escalation(ESC))
        .send()
        .await
        .expect("publish");
    ok(traced).await;
    let mut pool = SseReader::open(&server, POOL, TS, None).await;
    assert_eq!(delivered(&pool.next().await).0, ESC);
    assert_eq!(settle(&server, POOL, TS, ESC, "ack").await, 204);
    drop(pool);

    // Technical support asks for logs and reports progress; customer service has read neither.
    let ask = answer(
        ASK,
        "REQUEST_INFORMATION",
        json!({"requested_info_keys": ["modem_logs", "outage_times"]}),
        "2023-10-27T10:40:00.000Z",
    );
    ok(publish(&server, TS, &ask).await).await;
    let status = answer(
        STATUS,
        "STATUS_UPDATE",
        json!({"status": "IN_PROGRESS", "progress_percent": 40,
               "summary": "Remote diagnostic session booked.", "in_response_to": ESC}),
        "2023-10-27T10:45:00.000Z",
    );
    ok(publish(&server, TS, &status).await).await;

    // A second escalation nobody takes in time: it expires in the pool.
    let mut late = escalation(LATE);
    let soon = chrono_in(1500);
    late["metadata"]["expiration_time"] = soon.as_str().into();
    ok(publish(&server, CS, &late).await).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    // A notification technical support fails on five times: dead-lettered after max_deliver.
    let mut note = answer(
        NOTE,
        "NOTIFICATION",
        json!({"event_type": "CUSTOMER_CALLED_AGAIN", "message": "The customer called again."}),
        "2023-10-27T10:50:00.000Z",
    );
    note["metadata"]["sender_id"] = CS_ID.into();
    note["metadata"]["recipient_id"] = POOL.into();
    ok(publish(&server, CS, &note).await).await;
    let mut pool = SseReader::open(&server, POOL, TS, None).await;
    nack_past_max_deliver(&server, &mut pool, (POOL, TS), NOTE).await;
    assert!(pool.next_within(Duration::from_millis(800)).await.is_none());
    drop(pool);
    assert!(
        read_for(&server, POOL, TS, Duration::from_millis(300))
            .await
            .is_empty()
    );

    // An escalation of the task refused on publish: the customer's name is missing.
    let mut bad = escalation(BAD);
    bad["payload"]["data"]["customer_info"]
        .as_object_mut()
        .expect("customer_info")
        .remove("name");
    assert_eq!(publish(&server, CS, &bad).await.status(), 422);

    browser.sign_in(&server.base, ADMIN).await;
    browser.goto(&server.url(&format!("/#/task/{TASK}"))).await;

    // The escalation: when, who to whom, what it says, labelled by the ESCALATION schema.
    let escalation_card = browser.shown(&card(ESC), "NETWORK_CONNECTIVITY").await;
    for seen in [
        "ESCALATION",
        "HIGH",
        "customer_service_agent_001 → technical_support_agent_pool",
        "technical_support_agent_pool: acknowledged",
        "Issue category",
        "Severity\nCRITICAL",
        "Name\nJohn Doe",
        "Router model\nRouterX-Pro",
        "log_file_id_123",
        "state CUSTOMER_ISSUE_ESCALATED",
        "User 'John Doe' reported intermittent internet connection loss",
        "Please review logs, schedule a remote diagnostic session with the customer.",
        "COMMUNICATE_SOLUTION_TO_CUSTOMER",
        "Escalate to\nlevel3_network_expert_agent_pool",
        "raw JSON",
    ] {
        assert!(
            escalation_card.contains(seen),
            "the escalation lacks {seen:?}: {escalation_card}"
        );
    }
    // The card's time is when the hub accepted the handoff; the packet's own time is in its
    // tooltip.
    let time = browser
        .run(&format!(
            "const t = document.querySelector('{} header time.published'); \
             return t && [t.getAttribute('datetime'), t.title]",
            card(ESC)
        ))
        .await;
    let accepted = chrono::DateTime::parse_from_rfc3339(time[0].as_str().expect("a datetime"))
        .expect("an RFC 3339 time");
    assert!(
        accepted >= started && accepted <= chrono::Utc::now(),
        "accepted at {accepted}, the test started at {started}"
    );
    assert_eq!(
        time[1],
        "accepted by the hub; the message says 2023-10-27 10:30:00 UTC"
    );
    let trace = browser
        .run(&format!(
            "const a = document.querySelector('{} a.trace'); return a && [a.textContent, a.href, a.title]",
            card(ESC)
        ))
        .await;
    assert_eq!(
        trace,
        json!([
            "trace 4bf92f3577b34da6a3ce929d0e0e4736",
            "http://127.0.0.1:16686/trace/4bf92f3577b34da6a3ce929d0e0e4736",
            TRACEPARENT
        ])
    );
    let css = format!("{} section.payload > dl > dt", card(ESC));
    let labels = browser
        .run(&format!(
            "return [...document.querySelectorAll('{css}')].map(t => [t.textContent, t.title])"
        ))
        .await;
    assert_eq!(
        labels,
        json!([
            [
                "Issue category",
                "Routing category, e.g. `NETWORK_CONNECTIVITY`."
            ],
            ["Severity", "How severe the issue is."],
            ["Customer info", "Who is affected."],
            ["Technical details", "Technical facts gathered so far."]
        ])
    );
    // Previous actions in time order, though the packet lists them newest first.
    let actions = browser.texts(&format!("{} ol.actions li", card(ESC))).await;
    assert_eq!(actions.len(), 2, "{actions:?}");
    assert!(
        actions[0].starts_with("2023-10-27 10:20:05 UTC")
            && actions[0].contains("INITIAL_GREETING"),
        "{actions:?}"
    );
    assert!(actions[1].contains("DIAGNOSTIC_ATTEMPT"), "{actions:?}");
    // Long text is folded behind its beginning.
    let folded = browser
        .run(&format!(
            "const d = document.querySelector('{} dd[data-key=symptoms] details.long'); \
             return d && [d.open, d.querySelector('summary').textContent.length]",
            card(ESC)
        ))
        .await;
    assert_eq!(folded, json!([false, 121]));

    // What technical support sent back, waiting in customer service's inbox.
    let ask = browser.shown(&card(ASK), "REQUEST_INFORMATION").await;
    for seen in [
        "2023-10-27 10:40:00 UTC",
        "technical_support_agent_001 → customer_service_agent_001",
        "Requested info keys\nmodem_logs\noutage_times",
        "customer_service_agent_001: waiting, not delivered yet",
        "state DIAGNOSIS_IN_PROGRESS",
        "Escalated; the logs show DHCP lease drops.",
    ] {
        assert!(ask.contains(seen), "the request lacks {seen:?}: {ask}");
    }
    let status = browser.shown(&card(STATUS), "STATUS_UPDATE").await;
    for seen in [
        "Status\nIN_PROGRESS",
        "Progress percent\n40",
        "Summary\nRemote diagnostic session booked.",
        &format!("In response to\n{ESC}"),
        "customer_service_agent_001: waiting, not delivered yet",
    ] {
        assert!(
            status.contains(seen),
            "the status update lacks {seen:?}: {status}"
        );
    }

    // The expired escalation and the dead-lettered notification.
    browser
        .shown(
            &card(LATE),
            "technical_support_agent_pool: dead-lettered: expired at ",
        )
        .await;
    browser
        .shown(
            &card(NOTE),
            "technical_support_agent_pool: dead-lettered: max_deliver: delivered 5 times without an ack",
        )
        .await;
    // The refused escalation belongs to the task too: found, with why, when asked for (the
    // view itself reads no dead letter but those of its page's ids).
    assert_eq!(browser.count("article.refused-entry").await, 0);
    let read = browser
        .run("return performance.getEntriesByType('resource').map(e => e.name).filter(u => u.includes('/v1/dead-letters'))")
        .await;
    let read: Vec<&str> = read
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    // (The home page read its first page of 20 before.)
    assert!(
        read.iter().any(|u| u.contains("message_id="))
            && !read.iter().any(|u| u.contains("limit=1000")),
        "the task view reads dead letters by its ids only, no scan: {read:?}"
    );
    browser.click("button.find-refused").await;
    let refused = browser
        .shown("article.refused-entry", "refused on publish")
        .await;
    browser
        .shown("section.refused-search", "refused on publish")
        .await;
    assert!(
        refused.contains("invalid: /payload/data/customer_info"),
        "{refused}"
    );
    assert!(
        refused.contains("customer_service_agent_001 → technical_support_agent_pool"),
        "{refused}"
    );

    // Swimlanes: a lane per agent in order of appearance, a mark per entry in its sender's
    // lane, with its time, type and route on hover.
    let lanes = browser
        .run("return [...document.querySelectorAll('svg.swimlanes text.lane')].map(t => t.textContent)")
        .await;
    assert_eq!(lanes, json!([CS_ID, POOL, TS_ID]));
    let marks = browser
        .run("return [...document.querySelectorAll('svg.swimlanes g.mark')].map(g => g.querySelector('title').textContent)")
        .await;
    assert_eq!(marks.as_array().map(Vec::len), Some(5), "{marks}");
    assert_eq!(
        marks[0],
        json!(format!(
            "{} · ESCALATION · customer_service_agent_001 → technical_support_agent_pool",
            accepted.format("%Y-%m-%d %H:%M:%S UTC")
        ))
    );

    // No message carried usage: the totals say so instead of "0 tokens · $0".
    browser
        .shown("p.totals", "5 messages · usage not reported")
        .await;

    // Pictures for people (light, then dark as the system setting asks), in the test's output
    // folder; docs/images/ keeps copies made by hand.
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    browser.screenshot(&shots.join("task-light.png")).await;
    let background = "return getComputedStyle(document.body).backgroundColor";
    assert_eq!(browser.run(background).await, json!("rgb(246, 247, 249)"));
    browser.color_scheme("dark").await;
    assert_eq!(browser.run(background).await, json!("rgb(20, 23, 29)"));
    browser.screenshot(&shots.join("task-dark.png")).await;
    eprintln!("screenshots in {}", shots.display());
    drop(browser);
    server.stop().await;
}

/// The CSS selector of the card of handoff `id`.
fn card(id: &str) -> String {
    format!("article.handoff-card[data-id=\"{id}\"]")
}

/// An RFC 3339 time `ms` milliseconds from now.
fn chrono_in(ms: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::milliseconds(ms))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
