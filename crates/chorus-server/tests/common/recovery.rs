//! What the tests of a store going away and coming back share (Redis, PostgreSQL): publishing
//! until accepted (every refusal a prompt 503 with `Retry-After`), reading and acking until
//! every id came (none again after its 204), and `/healthz`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::*;

/// How long the hub may take to serve again once its store is back.
pub const RECOVERY: Duration = Duration::from_secs(10);

/// What publishing one message until it was accepted saw.
pub struct Attempts {
    /// 503 answers before the 201 (each checked for `Retry-After`).
    pub refused: usize,
    /// From the first try to the 201.
    pub took: Duration,
}

/// Publishes `id` (the same document each time, so a retry is a duplicate, never a second
/// message) until it is answered 201 or 200, within [`RECOVERY`]. Every refusal on the way
/// must be a 503 `store_unavailable` with `Retry-After`, answered within 15 s.
pub async fn publish_until_accepted(server: &TestServer, id: &str) -> Attempts {
    let started = Instant::now();
    let mut refused = 0;
    loop {
        let asked = Instant::now();
        let response = publish(server, ALICE, &message(id, "alice", "bob", id)).await;
        let status = response.status().as_u16();
        if status == 201 || status == 200 {
            return Attempts {
                refused,
                took: started.elapsed(),
            };
        }
        assert_eq!(status, 503, "a publish while the store is away is a 503");
        assert!(
            asked.elapsed() < Duration::from_secs(15),
            "the 503 came promptly, not after {:?}",
            asked.elapsed()
        );
        assert_eq!(
            response
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_owned())
                .as_deref(),
            Some("1"),
            "a 503 of a lost store says when to retry"
        );
        let body: serde_json::Value = response.json().await.unwrap();
        assert_eq!(body["error"], "store_unavailable", "{body}");
        refused += 1;
        assert!(
            started.elapsed() < RECOVERY,
            "{id}: the hub did not serve again within {RECOVERY:?} ({refused} refusals)"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads `bob`'s inbox until every id of `wanted` came, acking each; fails on an id acked
/// before (`acked`) coming again.
pub async fn read_and_ack(
    server: &TestServer,
    inbox: &mut SseReader,
    wanted: &BTreeSet<String>,
    acked: &mut BTreeSet<String>,
) {
    let deadline = Instant::now() + RECOVERY + PATIENCE;
    while !wanted.is_subset(acked) {
        assert!(
            Instant::now() < deadline,
            "not delivered: {:?}",
            wanted.difference(acked).collect::<Vec<_>>()
        );
        let Some(event) = inbox.next_within(Duration::from_secs(1)).await else {
            continue;
        };
        if event.event.as_deref() != Some("message") {
            continue;
        }
        let (id, _) = delivered(&event);
        assert!(
            !acked.contains(&id),
            "{id} was delivered again after its 204"
        );
        let deadline = Instant::now() + RECOVERY;
        loop {
            match settle(server, "bob", BOB, &id, "ack").await {
                204 => break,
                503 if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await
                }
                other => panic!("the ack of {id} answered {other}"),
            }
        }
        acked.insert(id);
    }
}

pub async fn health(server: &TestServer) -> (u16, String) {
    let response = client().get(server.url("/healthz")).send().await.unwrap();
    (
        response.status().as_u16(),
        response.text().await.unwrap_or_default(),
    )
}
