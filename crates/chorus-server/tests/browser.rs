//! The web UI in headless chromium: what a person sees on each page, over real HTTP on
//! 127.0.0.1. Set CHORUS_TEST_BROWSER to fail (rather than skip with a message) without chromium.

mod browser_fixtures;
mod common;
mod webdriver;

use browser_fixtures::{handoff, publish_ok, start};
use common::*;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

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

/// The conversation of the tests: a user's question with markup in it, folded analysis, a
/// tool call and its result, a final answer with citations, and a handoff.
async fn publish_conversation(server: &TestServer) {
    let steps = [
        said(
            "u1",
            json!({"role": "user", "content": "Weather in Tokyo? <script>window.__pwned = 1</script><b>bold</b>"}),
        ),
        said(
            "a1",
            json!({"channel": "analysis", "content": "The user wants the weather; call get_weather.",
            "metadata": {"token_usage": {"prompt_tokens": 500, "completion_tokens": 150, "total_cost_usd": 0.002},
                         "latency_ms": {"ttft": 400, "total_time": 1200}, "model_version": "gpt-test-1"}}),
        ),
        said(
            "a2",
            json!({"channel": "commentary", "content": "I'll check the current weather in Tokyo.",
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}],
            "metadata": {"token_usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_cost_usd": 0.001},
                         "latency_ms": {"total_time": 300}}}),
        ),
        said(
            "t1",
            json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 22}"}),
        ),
        said(
            "i1",
            json!({"channel": "commentary", "content": [
                {"type": "text", "text": "The radar picture:"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}}]}),
        ),
        said(
            "a3",
            json!({"channel": "final", "content": "It is 22°C [cit_01] and partly cloudy [cit_02].",
            "metadata": {"citation_map": {
                "cit_01": {"source_type": "pdf_document", "source_name": "Weather_Report.pdf",
                           "location": {"page_number": 42, "text_snippet": "Tokyo 22°C at noon."}},
                "cit_02": {"source_type": "web_search", "url": "https://example.org/tokyo", "access_date": "2024-03-20"}}}}),
        ),
    ];
    for step in &steps {
        publish_ok(server, ALICE, step).await;
    }
    publish_ok(
        server,
        ALICE,
        &handoff("00000000-0000-4000-8000-0000000000a1", "alice", "bob"),
    )
    .await;
}

#[tokio::test]
async fn a_conversation_shows_channels_tool_results_citations_and_totals() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    publish_conversation(&server).await;
    browser.sign_in(&server.base, ADMIN).await;
    browser.goto(&server.url("/#/conversation/conv-ui")).await;

    // The question is shown as typed; its markup is text, and the script never ran.
    let question = browser.shown("article.message", "Weather in Tokyo?").await;
    assert!(question.contains("<script>window.__pwned = 1</script><b>bold</b>"));
    assert_eq!(browser.run("return [window.__pwned === undefined, document.querySelectorAll('#main script, #main b').length]").await, json!([true, 0]));

    // Analysis is folded: its text is hidden until the summary is clicked.
    let analysis = browser.shown("details.channel.analysis", "analysis").await;
    assert!(
        !analysis.contains("call get_weather"),
        "analysis shown unfolded"
    );
    browser.click("details.channel.analysis summary").await;
    browser
        .shown(
            "details.channel.analysis",
            "The user wants the weather; call get_weather.",
        )
        .await;
    browser.shown("[data-id=a1] .usage", "prompt 500 tokens · completion 150 tokens · cost $0.002 · ttft 400 ms · latency 1200 ms · gpt-test-1").await;

    // Commentary with the tool call, its result beside it; the tool message is not shown apart.
    browser
        .shown(
            "[data-id=a2] section.channel.commentary",
            "I'll check the current weather in Tokyo.",
        )
        .await;
    let call = browser
        .shown(
            "[data-id=a2] li.tool-call",
            "get_weather({\"city\": \"Tokyo\"}) call_1",
        )
        .await;
    assert!(call.contains("→ {\"temperature\": 22}"));
    assert!(
        browser.count("article[data-id=t1]").await == 0,
        "the result sits with its call"
    );

    // An image the server kept is fetched with the token and shown.
    browser
        .shown(
            "[data-id=i1] section.channel.commentary",
            "The radar picture:",
        )
        .await;
    let shown = "const i = document.querySelector('[data-id=i1] img.media'); \
                 return i && i.complete ? [i.naturalWidth, i.src.slice(0, 5), i.dataset.blob.slice(0, 17)] : null";
    let deadline = tokio::time::Instant::now() + webdriver::SHOW;
    let image = loop {
        let image = browser.run(shown).await;
        if image.as_array().is_some_and(|a| a[0] != 0) || tokio::time::Instant::now() >= deadline {
            break image;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(image, json!([1, "blob:", "/v1/blobs/sha256-"]));

    // The final answer with its citations as numbered footnotes.
    browser
        .shown(
            "[data-id=a3] section.channel.final",
            "It is 22°C [1] and partly cloudy [2].",
        )
        .await;
    let notes = browser.texts("[data-id=a3] li.footnote").await;
    assert_eq!(notes.len(), 2);
    let first = &notes[0];
    assert!(
        first.contains("Weather_Report.pdf (pdf_document), p. 42")
            && first.contains("Tokyo 22°C at noon."),
        "{first}"
    );
    assert!(notes[1].contains("https://example.org/tokyo (web_search) accessed 2024-03-20"));

    // The handoff as a card, the totals, the graph.
    let card = browser.shown("article.handoff-card", "ESCALATION").await;
    for seen in [
        "HIGH",
        "alice → bob",
        "expires 2099-01-01T00:00:00.000Z",
        "task task-ui",
        "Review logs.",
        "DIAGNOSE_ROOT_CAUSE",
    ] {
        assert!(card.contains(seen), "card lacks {seen:?}: {card}");
    }
    browser.shown("p.totals", "7 messages · prompt 600 tokens · completion 170 tokens · cost $0.003 · latency 1500 ms").await;
    browser
        .shown("ul.edges", "alice → bob ×7 (ESCALATION)")
        .await;
    assert_eq!(
        browser
            .count("svg.graph g.edge[data-from=alice][data-to=bob]")
            .await,
        1
    );
    drop(browser);
    server.stop().await;
}

#[tokio::test]
async fn a_task_page_shows_handoff_cards_and_the_handoff_graph() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    publish_ok(
        &server,
        ALICE,
        &handoff("00000000-0000-4000-8000-0000000000b1", "alice", "bob"),
    )
    .await;
    let mut back = handoff("00000000-0000-4000-8000-0000000000b2", "bob", "alice");
    back["metadata"]["priority"] = "LOW".into();
    back["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("expiration_time");
    back["instructions"] = json!({"next_steps_suggestion": "Call the customer back.", "required_actions": ["CALL_BACK"]});
    publish_ok(&server, BOB, &back).await;
    browser.sign_in(&server.base, ADMIN).await;
    browser.goto(&server.url("/#/task/task-ui")).await;

    let cards = {
        browser
            .shown("article.handoff-card", "Call the customer back.")
            .await;
        browser.texts("article.handoff-card").await
    };
    assert_eq!(cards.len(), 2);
    let second = &cards[1];
    for seen in [
        "ESCALATION",
        "LOW",
        "bob → alice",
        "no expiry",
        "Call the customer back.",
        "CALL_BACK",
    ] {
        assert!(second.contains(seen), "card lacks {seen:?}: {second}");
    }
    assert!(cards[0].contains("expires 2099-01-01T00:00:00.000Z"));
    browser
        .shown("ul.edges", "alice → bob ×1 (ESCALATION)")
        .await;
    browser
        .shown("ul.edges", "bob → alice ×1 (ESCALATION)")
        .await;
    let drawn = browser.run("return [...document.querySelectorAll('svg.graph g.edge')].map(g => g.dataset.from + '>' + g.dataset.to + ':' + g.querySelectorAll('line').length)").await;
    assert_eq!(drawn, json!(["alice>bob:1", "bob>alice:1"]));
    browser.shown("svg.graph", "alice").await;
    drop(browser);
    server.stop().await;
}
