//! The web UI's inbox view in headless chromium: what waits in an inbox, in delivery order with
//! its state, read from the look endpoint, never from the stream (drawing it claims nothing).

mod browser_fixtures;
mod common;
mod webdriver;

use browser_fixtures::{handoff, publish_ok, start};
use common::*;

const URGENT: &str = "00000000-0000-4000-8000-0000000000e1";

#[tokio::test]
async fn an_inbox_is_shown_with_its_states_without_claiming_anything() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    publish_ok(&server, ALICE, &message("first", "alice", "bob", "x")).await;
    publish_ok(&server, ALICE, &handoff(URGENT, "alice", "bob")).await;
    browser.sign_in(&server.base, ADMIN).await;
    browser.shown("#live", "live").await;
    browser.type_in("#inbox-agent", "bob").await;
    browser.click("#inbox-form button").await;
    browser.shown("#inbox h2", "Inbox bob").await;
    browser
        .shown("#inbox .depth", "2 unacknowledged messages")
        .await;
    let rows = browser.texts("#inbox tbody tr").await;
    let cells: Vec<Vec<&str>> = rows.iter().map(|r| r.split('\t').collect()).collect();
    assert_eq!(
        cells,
        [
            vec![URGENT, "HIGH", "ready", "0", "alice", "ESCALATION"],
            vec!["first", "MEDIUM", "ready", "0", "alice", ""],
        ],
        "delivery order: the HIGH handoff first"
    );

    // A publish draws the page again; what it read claimed nothing.
    publish_ok(&server, ALICE, &message("second", "alice", "bob", "y")).await;
    browser.shown("#inbox .depth", "3 unacknowledged").await;
    let mut inbox = SseReader::open_with(&server, "bob", BOB, "max_in_flight=1").await;
    assert_eq!(delivered(&inbox.next().await), (URGENT.into(), 1));
    publish_ok(&server, ALICE, &message("third", "alice", "bob", "z")).await;
    browser.shown("#inbox .depth", "4 unacknowledged").await;
    let held = browser
        .shown(
            &format!("#inbox tr[data-id='{URGENT}']"),
            "held or delayed until",
        )
        .await;
    assert!(held.contains("\t1\t"), "one attempt: {held}");

    assert_eq!(settle(&server, "bob", BOB, URGENT, "ack").await, 204);
    browser.gone("#inbox tbody", URGENT).await;
    drop(inbox);
    drop(browser);
    server.stop().await;
}

#[tokio::test]
async fn an_empty_inbox_says_so() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    browser.sign_in(&server.base, ADMIN).await;
    browser.shown("#live", "live").await;
    browser.run("location.hash = '#/inbox/nobody'").await;
    browser
        .shown("#inbox", "Nothing waits in this inbox.")
        .await;
    browser
        .shown("#inbox .depth", "0 unacknowledged messages")
        .await;
    drop(browser);
    server.stop().await;
}
