//! SQLite-specific behaviour: stale deliveries, damaged files, group commit.

use std::io::{Seek, SeekFrom, Write};
use std::sync::Arc;
use std::time::Duration;

use chorus_bus::{Backend, Bus, BusConfig, BusError, Envelope, SqliteBus};

fn config() -> BusConfig {
    BusConfig {
        ack_wait: Duration::from_millis(200),
        poll_interval: Duration::from_millis(5),
        validator: None,
        ..BusConfig::default()
    }
}

#[tokio::test]
async fn an_ack_after_redelivery_is_refused_as_stale() {
    let dir = tempfile::tempdir().unwrap();
    let bus = SqliteBus::open(dir.path().join("b.db"), config()).unwrap();
    bus.publish_envelope(Envelope::new("m1", vec!["q".into()], b"{}".to_vec()))
        .await
        .unwrap();
    let first = bus
        .receive("q", 1, Duration::from_secs(1))
        .await
        .unwrap()
        .remove(0);
    let second = bus
        .receive("q", 1, Duration::from_secs(2))
        .await
        .unwrap()
        .remove(0);
    assert_eq!(second.attempt, 2);
    let err = bus.ack(&first).await.unwrap_err();
    assert!(matches!(err, BusError::StaleDelivery { .. }), "{err}");
    bus.ack(&second).await.unwrap();
}

#[tokio::test]
async fn a_damaged_file_is_detected_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    {
        let bus = SqliteBus::open(&path, config()).unwrap();
        for i in 0..300 {
            let env = Envelope::new(format!("m{i}"), vec!["q".into()], vec![b'x'; 600]);
            bus.publish_envelope(env).await.unwrap();
        }
    }
    // Fold the WAL into the main file, then scribble over a page in the middle.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    drop(conn);
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 4096 * 8, "file has {len} bytes");
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.seek(SeekFrom::Start(4096 * 3)).unwrap();
    file.write_all(&[0xA5; 4096 * 2]).unwrap();
    file.sync_all().unwrap();
    drop(file);
    let err = SqliteBus::open(&path, config())
        .err()
        .expect("a damaged file must not open");
    assert!(matches!(err, BusError::Corrupt(_)), "{err}");
    let not_a_db = dir.path().join("text.db");
    std::fs::write(&not_a_db, vec![b'z'; 8192]).unwrap();
    let err = SqliteBus::open(&not_a_db, config())
        .err()
        .expect("not a database");
    assert!(matches!(err, BusError::Corrupt(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_publishes_share_commits_and_all_survive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    let bus = Arc::new(SqliteBus::open(&path, config()).unwrap());
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let bus = bus.clone();
            tokio::spawn(async move {
                let env = Envelope::new(format!("m{i}"), vec!["q".into()], vec![1; 64]);
                bus.publish_envelope(env).await.unwrap()
            })
        })
        .collect();
    for t in tasks {
        assert!(!t.await.unwrap().duplicate);
    }
    drop(bus);
    let bus = SqliteBus::open(&path, config()).unwrap();
    let got = bus
        .receive("q", 500, Duration::from_millis(100))
        .await
        .unwrap();
    assert_eq!(got.len(), 200);
}

/// How SQLite runs the dedupe lookup of an id in the file at `path`.
fn dedupe_plan(path: &std::path::Path) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row(
        "EXPLAIN QUERY PLAN SELECT bytes FROM messages WHERE id = 'x' AND published_ms >= 0 \
         ORDER BY published_ms DESC LIMIT 1",
        [],
        |r| r.get(3),
    )
    .unwrap()
}

#[tokio::test]
async fn a_reopened_file_still_knows_the_ids_and_their_content_by_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b.db");
    let window = BusConfig {
        dedupe_window: Duration::from_millis(600),
        ..config()
    };
    let bus = SqliteBus::open(&path, window.clone()).unwrap();
    let first = Envelope::new("m1", vec!["q".into()], br#"{"a": 1, "b": [2]}"#.to_vec());
    assert!(!bus.publish_envelope(first).await.unwrap().duplicate);
    drop(bus);
    let plan = dedupe_plan(&path);
    assert!(plan.contains("USING INDEX messages_id"), "{plan}");
    let bus = SqliteBus::open(&path, window).unwrap();
    let same = Envelope::new("m1", vec!["q".into()], br#"{"b":[2.0],"a":1}"#.to_vec());
    assert!(bus.publish_envelope(same.clone()).await.unwrap().duplicate);
    let other = Envelope::new("m1", vec!["q".into()], br#"{"a": 1, "b": [3]}"#.to_vec());
    let err = bus.publish_envelope(other.clone()).await.unwrap_err();
    assert!(
        matches!(err, BusError::Conflict { ref id, .. } if id == "m1"),
        "{err}"
    );
    // Past the window the id is free again, with any content.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!bus.publish_envelope(other).await.unwrap().duplicate);
    assert_eq!(bus.depth("q").await.unwrap(), 2);
}
