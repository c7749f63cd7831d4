//! `/healthz` tells the truth about writing: a store that still answers reads but cannot take
//! a write (here: another process holds the SQLite file's write lock) is reported unhealthy,
//! as every publish then fails, and healthy again once it can write.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

#[tokio::test]
async fn healthz_fails_while_the_store_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    let health = || client().get(server.url("/healthz")).send();
    let ok = health().await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.json::<Value>().await.unwrap()["status"], "ok");

    // Another process takes the write lock and keeps it: reads still work (WAL), writes wait.
    let locker = rusqlite::Connection::open(db(dir.path())).unwrap();
    locker.execute_batch("BEGIN IMMEDIATE").unwrap();

    let asked = Instant::now();
    let sick = health().await.unwrap();
    let waited = asked.elapsed();
    assert_eq!(sick.status(), 503, "a store that cannot write is unhealthy");
    let body: Value = sick.json().await.unwrap();
    assert_eq!(body["error"], "store_unavailable", "{body}");
    assert!(
        waited < Duration::from_secs(8),
        "healthz answers within its own bound, took {waited:?}"
    );
    // The probe agrees with what a publish meets meanwhile.
    let refused = publish(&server, ALICE, &message("m-locked", "alice", "bob", "hi")).await;
    assert_eq!(refused.status(), 503, "a publish cannot be stored either");

    locker.execute_batch("ROLLBACK").unwrap();
    drop(locker);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let again = health().await.unwrap();
        if again.status() == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {} after the lock went",
            again.status()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stored = publish(&server, ALICE, &message("m-after", "alice", "bob", "hi")).await;
    assert_eq!(stored.status(), 201);
    server.stop().await;
}
