//! The web UI in headless chromium: what a person sees on each page, over real HTTP on
//! 127.0.0.1. Set CHORUS_TEST_BROWSER to fail (rather than skip with a message) without chromium.

mod common;
mod webdriver;

use common::*;
use serde_json::{Value, json};
use webdriver::Browser;

/// A chorus message of the conversation `conv-ui` from alice to bob.
fn said(id: &str, extra: Value) -> Value {
    let mut m = json!({"role": "assistant", "id": id, "name": "alice", "recipient": "bob",
        "metadata": {"session_id": "conv-ui"}});
    for (k, v) in extra.as_object().expect("fields") {
        if k == "metadata" {
            for (mk, mv) in v.as_object().expect("metadata fields") {
                m["metadata"][mk] = mv.clone();
            }
        } else {
            m[k] = v.clone();
        }
    }
    m
}

/// The seed-003 escalation from `from` to `to` in task `task-ui`, conversation `conv-ui`.
fn handoff(id: &str, from: &str, to: &str) -> Value {
    let path = format!("{}/../../examples/seeds/003-python-valid-escalation.json", env!("CARGO_MANIFEST_DIR"));
    let mut h: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("seed")).expect("seed JSON");
    let md = &mut h["metadata"];
    md["message_id"] = id.into();
    md["sender_id"] = from.into();
    md["recipient_id"] = to.into();
    md["task_id"] = "task-ui".into();
    md["correlation_id"] = "conv-ui".into();
    md["expiration_time"] = "2099-01-01T00:00:00.000Z".into();
    h
}

async fn publish_ok(server: &TestServer, token: &str, body: &Value) {
    let r = publish(server, token, body).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
}

/// The conversation of the tests: a user's question with markup in it, folded analysis, a
/// tool call and its result, a final answer with citations, and a handoff.
async fn publish_conversation(server: &TestServer) {
    let steps = [
        said("u1", json!({"role": "user", "content": "Weather in Tokyo? <script>window.__pwned = 1</script><b>bold</b>"})),
        said("a1", json!({"channel": "analysis", "content": "The user wants the weather; call get_weather.",
            "metadata": {"token_usage": {"prompt_tokens": 500, "completion_tokens": 150, "total_cost_usd": 0.002},
                         "latency_ms": {"ttft": 400, "total_time": 1200}, "model_version": "gpt-test-1"}})),
        said("a2", json!({"channel": "commentary", "content": "I'll check the current weather in Tokyo.",
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}],
            "metadata": {"token_usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_cost_usd": 0.001},
                         "latency_ms": {"total_time": 300}}})),
        said("t1", json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 22}"})),
        said("a3", json!({"channel": "final", "content": "It is 22°C [cit_01] and partly cloudy [cit_02].",
            "metadata": {"citation_map": {
                "cit_01": {"source_type": "pdf_document", "source_name": "Weather_Report.pdf",
                           "location": {"page_number": 42, "text_snippet": "Tokyo 22°C at noon."}},
                "cit_02": {"source_type": "web_search", "url": "https://example.org/tokyo", "access_date": "2024-03-20"}}}})),
    ];
    for step in &steps {
        publish_ok(server, ALICE, step).await;
    }
    publish_ok(server, ALICE, &handoff("00000000-0000-4000-8000-0000000000a1", "alice", "bob")).await;
}

#[tokio::test]
async fn a_conversation_shows_channels_tool_results_citations_and_totals() {
    let Some(browser) = Browser::launch().await else { return };
    let (_dir, server) = fresh(30).await;
    publish_conversation(&server).await;
    browser.sign_in(&server.base, ADMIN).await;
    browser.goto(&server.url("/#/conversation/conv-ui")).await;

    // The question is shown as typed; its markup is text, and the script never ran.
    let question = browser.shown("article.message", "Weather in Tokyo?").await;
    assert!(browser.text(&question).await.contains("<script>window.__pwned = 1</script><b>bold</b>"));
    assert_eq!(browser.run("return [window.__pwned === undefined, document.querySelectorAll('#main script, #main b').length]").await, json!([true, 0]));

    // Analysis is folded: its text is hidden until the summary is clicked.
    let analysis = browser.shown("details.channel.analysis", "analysis").await;
    assert!(!browser.text(&analysis).await.contains("call get_weather"), "analysis shown unfolded");
    let summary = browser.all("details.channel.analysis summary").await.pop().expect("summary");
    browser.click(&summary).await;
    browser.shown("details.channel.analysis", "The user wants the weather; call get_weather.").await;
    browser.shown("[data-id=a1] .usage", "prompt 500 tokens · completion 150 tokens · cost $0.002 · ttft 400 ms · latency 1200 ms · gpt-test-1").await;

    // Commentary with the tool call, its result beside it; the tool message is not shown apart.
    browser.shown("[data-id=a2] section.channel.commentary", "I'll check the current weather in Tokyo.").await;
    let call = browser.shown("[data-id=a2] li.tool-call", "get_weather({\"city\": \"Tokyo\"}) call_1").await;
    assert!(browser.text(&call).await.contains("→ {\"temperature\": 22}"));
    assert!(browser.all("article[data-id=t1]").await.is_empty(), "the result sits with its call");

    // The final answer with its citations as numbered footnotes.
    browser.shown("[data-id=a3] section.channel.final", "It is 22°C [1] and partly cloudy [2].").await;
    let notes = browser.all("[data-id=a3] li.footnote").await;
    assert_eq!(notes.len(), 2);
    let first = browser.text(&notes[0]).await;
    assert!(first.contains("Weather_Report.pdf (pdf_document), p. 42") && first.contains("Tokyo 22°C at noon."), "{first}");
    assert!(browser.text(&notes[1]).await.contains("https://example.org/tokyo (web_search) accessed 2024-03-20"));

    // The handoff as a card, the totals, the graph.
    let card = browser.shown("article.handoff-card", "ESCALATION").await;
    let card = browser.text(&card).await;
    for seen in ["HIGH", "alice → bob", "expires 2099-01-01T00:00:00.000Z", "task task-ui", "Review logs.", "DIAGNOSE_ROOT_CAUSE"] {
        assert!(card.contains(seen), "card lacks {seen:?}: {card}");
    }
    browser.shown("p.totals", "6 messages · prompt 600 tokens · completion 170 tokens · cost $0.003 · latency 1500 ms").await;
    browser.shown("ul.edges", "alice → bob ×6 (ESCALATION)").await;
    assert_eq!(browser.all("svg.graph g.edge[data-from=alice][data-to=bob]").await.len(), 1);
    drop(browser);
    server.stop().await;
}

#[tokio::test]
async fn a_task_page_shows_handoff_cards_and_the_handoff_graph() {
    let Some(browser) = Browser::launch().await else { return };
    let (_dir, server) = fresh(30).await;
    publish_ok(&server, ALICE, &handoff("00000000-0000-4000-8000-0000000000b1", "alice", "bob")).await;
    let mut back = handoff("00000000-0000-4000-8000-0000000000b2", "bob", "alice");
    back["metadata"]["priority"] = "LOW".into();
    back["metadata"].as_object_mut().expect("metadata").remove("expiration_time");
    back["instructions"] = json!({"next_steps_suggestion": "Call the customer back.", "required_actions": ["CALL_BACK"]});
    publish_ok(&server, BOB, &back).await;
    browser.sign_in(&server.base, ADMIN).await;
    browser.goto(&server.url("/#/task/task-ui")).await;

    let cards = {
        browser.shown("article.handoff-card", "Call the customer back.").await;
        browser.all("article.handoff-card").await
    };
    assert_eq!(cards.len(), 2);
    let second = browser.text(&cards[1]).await;
    for seen in ["ESCALATION", "LOW", "bob → alice", "no expiry", "Call the customer back.", "CALL_BACK"] {
        assert!(second.contains(seen), "card lacks {seen:?}: {second}");
    }
    assert!(browser.text(&cards[0]).await.contains("expires 2099-01-01T00:00:00.000Z"));
    browser.shown("ul.edges", "alice → bob ×1 (ESCALATION)").await;
    browser.shown("ul.edges", "bob → alice ×1 (ESCALATION)").await;
    let drawn = browser.run("return [...document.querySelectorAll('svg.graph g.edge')].map(g => g.dataset.from + '>' + g.dataset.to + ':' + g.querySelectorAll('line').length)").await;
    assert_eq!(drawn, json!(["alice>bob:1", "bob>alice:1"]));
    browser.shown("svg.graph", "alice").await;
    drop(browser);
    server.stop().await;
}

#[tokio::test]
async fn the_token_is_asked_for_and_a_wrong_one_is_refused() {
    let Some(browser) = Browser::launch().await else { return };
    let (_dir, server) = fresh(30).await;
    publish_ok(&server, ALICE, &handoff("00000000-0000-4000-8000-0000000000c1", "alice", "bob")).await;
    browser.sign_in(&server.base, "not-the-admin-token").await;
    browser.shown("#main", "That token was refused; enter the admin token.").await;
    assert!(browser.all("#dead-letters").await.is_empty(), "no data without the token");
    browser.sign_in(&server.base, ADMIN).await;
    browser.shown("#dead-letters", "No dead letters.").await;
    browser.shown("#live", "live").await;
    let forget = browser.all("#forget").await.pop().expect("forget button");
    browser.click(&forget).await;
    browser.shown("#token-form", "Admin token").await;
    assert_eq!(browser.run("return sessionStorage.length").await, json!(0));
    drop(browser);
    server.stop().await;
}
