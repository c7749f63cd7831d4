//! The web UI's home page in headless chromium: the token, the task and conversation lists with
//! live updates, dead letters with replay, confirmations with approve and reject.

mod browser_fixtures;
mod common;
mod webdriver;

use browser_fixtures::{handoff, publish_ok, start};
use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn the_token_is_asked_for_and_a_wrong_one_is_refused() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    publish_ok(
        &server,
        ALICE,
        &handoff("00000000-0000-4000-8000-0000000000c1", "alice", "bob"),
    )
    .await;
    browser.sign_in(&server.base, "not-the-admin-token").await;
    browser
        .shown("#main", "That token was refused; enter the admin token.")
        .await;
    assert!(
        browser.count("#dead-letters").await == 0,
        "no data without the token"
    );
    browser.sign_in(&server.base, ADMIN).await;
    browser.shown("#dead-letters", "No dead letters.").await;
    browser.shown("#live", "live").await;
    browser.click("#forget").await;
    browser.shown("#token-form", "Admin token").await;
    assert_eq!(browser.run("return sessionStorage.length").await, json!(0));
    drop(browser);
    server.stop().await;
}

/// A handoff of its own task and conversation `id`.
fn task_handoff(n: u32, id: &str) -> Value {
    let mut h = handoff(&format!("00000000-0000-4000-8000-{n:012}"), "alice", "bob");
    h["metadata"]["task_id"] = id.into();
    h["metadata"]["correlation_id"] = id.into();
    h
}

#[tokio::test]
async fn the_home_page_lists_tasks_most_recent_first_and_updates_live() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    publish_ok(&server, ALICE, &task_handoff(1, "task-old")).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    publish_ok(&server, ALICE, &task_handoff(2, "task-new")).await;
    browser.sign_in(&server.base, ADMIN).await;
    browser.shown("#tasks", "task-new").await;
    let rows = |css: &'static str| {
        let browser = &browser;
        async move {
            let mut texts = Vec::new();
            for row in browser.texts(css).await {
                texts.push(row.split_whitespace().next().unwrap_or_default().to_owned());
            }
            texts
        }
    };
    assert_eq!(rows("#tasks tbody tr").await, ["task-new", "task-old"]);
    // A task's handoffs make a conversation of the task's id: it is not listed twice.
    assert_eq!(rows("#conversations tbody tr").await, Vec::<String>::new());
    browser
        .shown(
            "#conversations .also-tasks",
            "2 conversations of this page are tasks listed above",
        )
        .await;
    browser.shown("#live", "live").await;

    // A publish shows at the top without reloading the page.
    browser.run("window.__same_page = 42").await;
    publish_ok(&server, ALICE, &task_handoff(3, "task-live")).await;
    browser.shown("#tasks tbody tr", "task-live").await;
    assert_eq!(
        rows("#tasks tbody tr").await,
        ["task-live", "task-new", "task-old"]
    );
    assert_eq!(
        browser.run("return window.__same_page").await,
        json!(42),
        "the page was reloaded"
    );
    browser.click("#tasks a[href='#/task/task-live']").await;
    browser.shown("#detail h2", "Task task-live").await;
    browser.shown("article.handoff-card", "ESCALATION").await;
    drop(browser);
    server.stop().await;
}

#[tokio::test]
async fn dead_letters_show_their_reason_and_replay_from_the_page() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    browser.sign_in(&server.base, ADMIN).await;
    browser.shown("#dead-letters", "No dead letters.").await;
    browser.shown("#live", "live").await;

    // Refused on publish: shown with the pointer of the problem, without a reload.
    let mut no_recipient = message("lost-1", "alice", "bob", "x");
    no_recipient
        .as_object_mut()
        .expect("object")
        .remove("recipient");
    assert_eq!(publish(&server, ALICE, &no_recipient).await.status(), 422);
    browser
        .shown("article.dead-letter", "invalid: /recipient")
        .await;

    // Nacked past the last attempt: dead-lettered by the inbox, shown live too.
    publish_ok(&server, ALICE, &message("hot-potato", "alice", "bob", "x")).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    nack_past_max_deliver(&server, &mut inbox, ("bob", BOB), "hot-potato").await;
    let letter = browser.shown("article.dead-letter", "hot-potato").await;
    for seen in [
        "from inbox bob",
        "max_deliver: delivered 5 times without an ack",
    ] {
        assert!(
            letter.contains(seen),
            "dead letter lacks {seen:?}: {letter}"
        );
    }
    let letters = browser
        .run("return [...document.querySelectorAll('article.dead-letter')].map(a => a.dataset.id)")
        .await;
    let hot = letters
        .as_array()
        .expect("ids")
        .last()
        .and_then(Value::as_str)
        .expect("the max_deliver letter")
        .to_owned();
    browser
        .click(&format!(
            "article.dead-letter[data-id='{hot}'] button.replay"
        ))
        .await;
    browser.shown("#status", "replayed hot-potato").await;
    browser.gone("article.dead-letter", "hot-potato").await;
    assert_eq!(
        delivered(&inbox.next().await),
        ("hot-potato".into(), 1),
        "replayed into bob's inbox"
    );
    browser
        .shown("article.dead-letter", "invalid: /recipient")
        .await;
    drop(inbox);
    drop(browser);
    server.stop().await;
}

async fn ask(server: &TestServer, tool: &str, call_id: &str, arguments: &str) -> String {
    let r = client()
        .post(server.url("/v1/confirmations"))
        .bearer_auth(ALICE)
        .json(&json!({"agent": "alice", "tool": tool, "call_id": call_id, "arguments": arguments, "task_id": "task-ui"}))
        .send()
        .await
        .expect("confirmation request");
    assert_eq!(r.status(), 201);
    r.json::<Value>().await.expect("record")["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn confirmation(server: &TestServer, id: &str) -> Value {
    let r = client()
        .get(server.url(&format!("/v1/confirmations/{id}")))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("get");
    r.json().await.expect("record")
}

#[tokio::test]
async fn pending_confirmations_are_approved_and_rejected_from_the_page() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    browser.sign_in(&server.base, ADMIN).await;
    browser
        .shown("#confirmations", "Nothing waits for a person.")
        .await;
    browser.shown("#live", "live").await;
    let drop_id = ask(
        &server,
        "delete_database",
        "call_del",
        "{\"name\": \"prod\"}",
    )
    .await;
    let mail_id = ask(
        &server,
        "send_email",
        "call_mail",
        "{\"to\": \"<img src=x onerror=alert(1)>\"}",
    )
    .await;

    let card = browser
        .shown("article.confirmation", "delete_database")
        .await;
    let text = card;
    for seen in [
        "asked by alice in task task-ui",
        "call call_del",
        "{\"name\": \"prod\"}",
    ] {
        assert!(text.contains(seen), "card lacks {seen:?}: {text}");
    }
    browser
        .shown(
            "article.confirmation",
            "{\"to\": \"<img src=x onerror=alert(1)>\"}",
        )
        .await;

    // A note typed for the second survives the page being drawn again after the first.
    browser
        .type_in(
            &format!("article.confirmation[data-id='{mail_id}'] input.note"),
            "unknown recipient",
        )
        .await;
    browser
        .type_in(
            &format!("article.confirmation[data-id='{drop_id}'] input.note"),
            "checked with the owner",
        )
        .await;
    browser
        .click(&format!(
            "article.confirmation[data-id='{drop_id}'] button.approve"
        ))
        .await;
    browser.shown("#status", "approved delete_database").await;
    browser
        .gone("article.confirmation", "delete_database")
        .await;
    let record = confirmation(&server, &drop_id).await;
    assert_eq!(
        (
            record["state"].as_str(),
            record["decided_by"].as_str(),
            record["note"].as_str()
        ),
        (
            Some("approved"),
            Some("admin"),
            Some("checked with the owner")
        )
    );

    browser
        .click(&format!(
            "article.confirmation[data-id='{mail_id}'] button.reject"
        ))
        .await;
    browser
        .shown("#confirmations", "Nothing waits for a person.")
        .await;
    let record = confirmation(&server, &mail_id).await;
    assert_eq!(
        (record["state"].as_str(), record["note"].as_str()),
        (Some("rejected"), Some("unknown recipient"))
    );
    drop(browser);
    server.stop().await;
}

#[tokio::test]
async fn a_long_list_shows_one_page_with_its_size_and_pages_on() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    for i in 0..23 {
        let refused = publish(
            &server,
            ALICE,
            &json!({"role": "user", "id": format!("bad-{i}")}),
        )
        .await;
        assert_eq!(refused.status(), 422);
    }
    browser.sign_in(&server.base, ADMIN).await;
    browser
        .shown("#dead-letters .pager", "dead letters 1–20 of 23")
        .await;
    assert_eq!(
        browser.count("article.dead-letter").await,
        20,
        "one page read"
    );
    browser.click("#dead-letters button.next-page").await;
    browser
        .shown("#dead-letters .pager", "dead letters 21–23 of 23")
        .await;
    assert_eq!(browser.count("article.dead-letter").await, 3);
    browser.shown("article.dead-letter", "bad-22").await;
    browser.shown("#live", "live").await;

    // A change drawn live keeps the page a person is on.
    publish_ok(&server, ALICE, &task_handoff(9, "task-while-paging")).await;
    browser.shown("#tasks tbody tr", "task-while-paging").await;
    browser
        .shown("#dead-letters .pager", "dead letters 21–23 of 23")
        .await;
    browser.click("#dead-letters button.first-page").await;
    browser
        .shown("#dead-letters .pager", "dead letters 1–20 of 23")
        .await;
    browser.shown("article.dead-letter", "bad-0").await;
    drop(browser);
    server.stop().await;
}
