//! The per-inbox backlog of `/metrics` is the store's depth: messages from before a restart
//! count, and a delivered but unsettled message is still backlog.

mod common;

use common::*;

async fn backlog(server: &TestServer, inbox: &str) -> Option<f64> {
    let name = format!("chorus_inbox_backlog{{inbox=\"{inbox}\"}} ");
    let text = metrics_text(server).await;
    text.lines()
        .find_map(|l| l.strip_prefix(&name)?.parse().ok())
}

#[tokio::test]
async fn the_backlog_is_what_the_store_holds_unacknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(30);
    let server = TestServer::start(&db(dir.path()), &config).await;
    for id in ["b1", "b2"] {
        let r = publish(&server, ALICE, &message(id, "alice", "bob", "x")).await;
        assert_eq!(r.status(), 201);
    }
    assert_eq!(backlog(&server, "bob").await, Some(2.0));
    assert_eq!(
        backlog(&server, "alice").await,
        None,
        "nothing was sent to alice"
    );
    server.stop().await;

    // After a restart the messages still wait; one more makes three.
    let server = TestServer::start(&db(dir.path()), &config).await;
    let r = publish(&server, ALICE, &message("b3", "alice", "bob", "x")).await;
    assert_eq!(r.status(), 201);
    assert_eq!(backlog(&server, "bob").await, Some(3.0));

    // Delivered and not settled is still backlog; acked is not.
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let (first, _) = delivered(&inbox.next().await);
    assert_eq!(backlog(&server, "bob").await, Some(3.0));
    assert_eq!(settle(&server, "bob", BOB, &first, "ack").await, 204);
    assert_eq!(backlog(&server, "bob").await, Some(2.0));
    drop(inbox);
    server.stop().await;
}
