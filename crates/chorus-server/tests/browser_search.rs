//! The home page in headless chromium: search by task, correlation, agent and message id (a
//! stored message with its publish time and task, and a dead letter, deleted from the results), paging through the tasks, and live changes that read
//! again only the sections they alter. Writes screenshots of the home page, light and dark. Set
//! CHORUS_TEST_BROWSER to fail without chromium.

mod browser_fixtures;
mod common;
mod webdriver;

use browser_fixtures::{handoff, publish_ok, start};
use common::*;
use serde_json::json;

/// Searches for `q` with the form on the page shown.
async fn search(browser: &webdriver::Browser, q: &str) {
    // Typed and submitted in one script: a live change may draw the page again between two
    // WebDriver calls, and a click would then submit the new form without the typed id.
    browser
        .run_with(
            "const input = document.getElementById('search'); \
             input.value = arguments[0]; input.form.requestSubmit();",
            json!([q]),
        )
        .await;
}

/// How many times the page has asked for a URL starting with `prefix`.
async fn fetched(browser: &webdriver::Browser, prefix: &str) -> u64 {
    let script = "return performance.getEntriesByType('resource').filter(e => { \
                  const u = new URL(e.name); return (u.pathname + u.search).startsWith(arguments[0]); }).length";
    browser
        .run_with(script, json!([prefix]))
        .await
        .as_u64()
        .expect("a count")
}

#[tokio::test]
async fn search_finds_tasks_correlations_inboxes_and_dead_letters() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    // A handoff in task-ui (correlation conv-ui) waiting in bob's inbox, and a message refused
    // on publish (no recipient), kept as a dead letter.
    publish_ok(
        &server,
        ALICE,
        &handoff("00000000-0000-4000-8000-0000000000d1", "alice", "bob"),
    )
    .await;
    let mut lost = message("lost-1", "alice", "bob", "x");
    lost.as_object_mut().expect("object").remove("recipient");
    assert_eq!(publish(&server, ALICE, &lost).await.status(), 422);

    browser.sign_in(&server.base, ADMIN).await;
    browser.shown("#tasks", "task-ui").await;

    search(&browser, "task-ui").await;
    browser
        .shown("ul.hits li.task", "task task-ui (1 message)")
        .await;
    browser.click("ul.hits li.task a").await;
    browser.shown("#detail h2", "Task task-ui").await;
    browser.goto(&server.url("/#/")).await;

    browser.shown("#search-form", "Search").await;
    search(&browser, "conv-ui").await;
    browser
        .shown(
            "ul.hits li.correlation",
            "correlation conv-ui (1 message) in task task-ui",
        )
        .await;

    search(&browser, "bob").await;
    browser
        .shown("ul.hits li.inbox", "inbox bob (1 unacknowledged)")
        .await;

    // A stored message found by its id, with when the hub accepted it, and a link to its task.
    search(&browser, "00000000-0000-4000-8000-0000000000d1").await;
    let hit = browser
        .shown(
            "ul.hits li.message",
            "message 00000000-0000-4000-8000-0000000000d1: ESCALATION, alice → bob, accepted 20",
        )
        .await;
    assert!(hit.contains("UTC in task task-ui"), "{hit}");
    browser.click("ul.hits li.message a").await;
    browser.shown("#detail h2", "Task task-ui").await;
    browser.goto(&server.url("/#/")).await;
    browser.shown("#search-form", "Search").await;

    // A message id found among the dead letters, and deleted from there.
    search(&browser, "lost-1").await;
    let letter = browser
        .shown("#found-dead-letters article.dead-letter", "lost-1")
        .await;
    assert!(letter.contains("invalid: /recipient"), "{letter}");
    assert!(letter.contains("refused on publish"), "{letter}");
    // When it became a dead letter, as the store recorded it (this century, in UTC).
    assert!(letter.contains("dead-lettered 20"), "{letter}");
    browser
        .click("#found-dead-letters article.dead-letter button.delete")
        .await;
    browser.shown("#status", "deleted lost-1").await;
    browser
        .shown("#search-results", "Nothing is named lost-1")
        .await;
    let dead = get_json(&server, "/v1/dead-letters", Some(ADMIN)).await;
    assert_eq!(dead["total"], json!(0), "{dead}");

    search(&browser, "no such id").await;
    browser.shown("#main .error", "search takes one id").await;
    drop(browser);
    server.stop().await;
}

#[tokio::test]
async fn the_home_page_pages_through_tasks_and_reads_again_only_what_changed() {
    let Some((browser, _dir, server)) = start().await else {
        return;
    };
    for n in 0..23 {
        let id = format!("00000000-0000-4000-8000-{n:012}");
        let mut h = handoff(&id, "alice", "bob");
        h["metadata"]["task_id"] = format!("task-{n:02}").into();
        publish_ok(&server, ALICE, &h).await;
    }
    let mut lost = message("lost-2", "alice", "bob", "x");
    lost.as_object_mut().expect("object").remove("recipient");
    assert_eq!(publish(&server, ALICE, &lost).await.status(), 422);
    browser.sign_in(&server.base, ADMIN).await;
    // Room for every request of the test in the page's resource timings.
    browser
        .run("performance.setResourceTimingBufferSize(100000)")
        .await;
    browser.shown("#tasks .pager", "tasks 1–20 of 23").await;
    browser.shown("#tasks h2", "Tasks 23").await;
    browser.shown("#live", "live").await;

    // Pictures of the home page, light and dark, in the test's output folder.
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    browser.screenshot(&shots.join("home-light.png")).await;
    browser.color_scheme("dark").await;
    browser.screenshot(&shots.join("home-dark.png")).await;
    browser.color_scheme("light").await;

    browser.click("#tasks button.next-page").await;
    browser.shown("#tasks .pager", "tasks 21–23 of 23").await;
    let rows = browser.texts("#tasks tbody tr").await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    browser.click("#tasks button.first-page").await;
    browser.shown("#tasks .pager", "tasks 1–20 of 23").await;

    // A publish reads the task and conversation lists again, not the confirmations nor the
    // dead letters.
    let before: Vec<u64> = {
        let mut v = Vec::new();
        for p in ["/v1/confirmations", "/v1/dead-letters", "/v1/tasks"] {
            v.push(fetched(&browser, p).await);
        }
        v
    };
    let mut h = handoff("00000000-0000-4000-8000-0000000000f1", "alice", "bob");
    h["metadata"]["task_id"] = "task-live".into();
    publish_ok(&server, ALICE, &h).await;
    browser.shown("#tasks tbody tr", "task-live").await;
    browser.shown("#tasks h2", "Tasks 24").await;
    let after = [
        fetched(&browser, "/v1/confirmations").await,
        fetched(&browser, "/v1/dead-letters").await,
        fetched(&browser, "/v1/tasks").await,
    ];
    assert_eq!(after[0], before[0], "confirmations read again");
    assert_eq!(after[1], before[1], "dead letters read again");
    assert!(
        after[2] > before[2],
        "tasks not read again: {before:?} {after:?}"
    );
    drop(browser);
    server.stop().await;
}
