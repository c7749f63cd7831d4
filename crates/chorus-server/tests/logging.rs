//! What the server logs: ids, the W3C trace context and outcomes — never redacted contents.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;

/// Collects everything logged.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[tokio::test]
async fn logs_ids_trace_context_and_outcomes_but_no_contents() {
    let captured = Captured::default();
    let writer = captured.clone();
    // Per-message lines are at `debug`.
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    // The test runs on one thread, so the server's tasks log here too.
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let mut config = config(30);
    config.redact.patterns = vec!["email".into()];
    let server = TestServer::start(&db(dir.path()), &config).await;
    let mut handoff: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/seeds/003-python-valid-escalation.json"
        ))
        .unwrap(),
    )
    .unwrap();
    handoff["metadata"]["sender_id"] = "alice".into();
    handoff["metadata"]["recipient_id"] = "bob".into();
    handoff["payload"]["data"]["customer_info"]["user_id"] = "john.doe@example.com".into();
    let r = client()
        .post(server.url("/v1/messages"))
        .bearer_auth(ALICE)
        .header("traceparent", TRACEPARENT)
        .json(&handoff)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let spoofed = message("m-spoof", "bob", "bob", "x");
    assert_eq!(publish(&server, ALICE, &spoofed).await.status(), 403);
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let (id, _) = delivered(&inbox.next().await);
    assert_eq!(settle(&server, "bob", BOB, &id, "ack").await, 204);
    drop(inbox);
    server.stop().await;

    let log = captured.text();
    let accepted = log
        .lines()
        .find(|l| l.contains("accepted"))
        .unwrap_or_else(|| panic!("no accepted line in\n{log}"));
    for part in [
        format!("traceparent={TRACEPARENT}"),
        format!("message_id={id}"),
        "correlation_id=flow-xyz-123".into(),
        "task_id=task-abc-456".into(),
        "status=201".into(),
    ] {
        assert!(accepted.contains(&part), "{part} in {accepted}");
    }
    assert!(
        log.lines()
            .any(|l| l.contains("refused") && l.contains("status=403") && l.contains("m-spoof")),
        "{log}"
    );
    assert!(log.contains("delivered"), "{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("settled") && l.contains(&id)),
        "{log}"
    );
    assert!(
        !log.contains("john.doe"),
        "contents are never logged:\n{log}"
    );
}

/// At the default level (`info`) a message published, delivered and acked writes no log line:
/// the log says what changes the hub for a person; the counts are in /metrics. (Before, three
/// lines of about 590 bytes each were written per message.)
#[tokio::test]
async fn the_default_level_writes_nothing_per_message() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config(30)).await;
    let before = captured.text().len();
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    const MESSAGES: usize = 50;
    for i in 0..MESSAGES {
        let id = format!("quiet-{i}");
        assert_eq!(
            publish(&server, ALICE, &message(&id, "alice", "bob", "hi"))
                .await
                .status(),
            201
        );
        let (got, _) = delivered(&inbox.next().await);
        assert_eq!(settle(&server, "bob", BOB, &got, "ack").await, 204);
    }
    let bytes = captured.text().len() - before;
    eprintln!(
        "log bytes per message at the default level: {:.1}",
        bytes as f64 / MESSAGES as f64
    );
    assert_eq!(
        bytes,
        0,
        "nothing logged per message at info:\n{}",
        &captured.text()[before..]
    );
    let metrics = metrics_text(&server).await;
    assert!(metrics.contains("chorus_published_total 50"), "{metrics}");
    assert!(metrics.contains("chorus_acked_total 50"), "{metrics}");
    drop(inbox);
    server.stop().await;
}
