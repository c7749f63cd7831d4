//! Trace context across the hub: the caller's W3C `traceparent` is stored with the message and
//! handed out with it; with the `otlp` feature, spans reach an OTLP/HTTP collector.

mod common;

use common::{ADMIN, ALICE, BOB, SseReader, client, delivered, fresh, get_json, publish, settle};
use serde_json::{Value, json};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn traced_message(id: &str) -> Value {
    json!({"role": "user", "id": id, "name": "alice", "recipient": "bob",
           "metadata": {"session_id": "conv-trace"}, "content": "check the router"})
}

async fn publish_traced(server: &common::TestServer, id: &str, traceparent: &str) {
    let r = client()
        .post(server.url("/v1/messages"))
        .bearer_auth(ALICE)
        .header("traceparent", traceparent)
        .json(&traced_message(id))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

/// The trace id inside a stored `traceparent`.
fn trace_of(metadata: &Value) -> &str {
    let tp = metadata["traceparent"]
        .as_str()
        .expect("metadata.traceparent");
    assert_eq!(tp.len(), 55, "{tp}");
    tp.split('-').nth(1).unwrap()
}

#[tokio::test]
async fn traceparent_travels_with_the_message() {
    let (_dir, server) = fresh(30).await;
    publish_traced(&server, "traced-1", TRACEPARENT).await;
    let untraced = publish(
        &server,
        ALICE,
        &common::message("plain-1", "alice", "bob", "hi"),
    )
    .await;
    assert_eq!(untraced.status(), 201);

    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let event = inbox.next().await;
    let data = event.json();
    assert_eq!(data["message_id"], "traced-1");
    let meta = &data["message"]["metadata"];
    assert_eq!(
        trace_of(meta),
        TRACE_ID,
        "delivered with the caller's trace"
    );
    assert_eq!(meta["trace_id"], TRACE_ID);
    assert_eq!(
        meta["session_id"], "conv-trace",
        "the rest of the metadata stays"
    );
    if !cfg!(feature = "otlp") {
        assert_eq!(meta["traceparent"], TRACEPARENT);
    }
    let (id, _) = delivered(&event);
    assert_eq!(settle(&server, "bob", BOB, &id, "ack").await, 204);
    let plain = inbox.next().await.json();
    match plain["message"].get("metadata") {
        // Exported spans start a trace at the hub for a message that carries none.
        Some(meta) if cfg!(feature = "otlp") => assert_ne!(trace_of(meta), TRACE_ID),
        other => assert!(other.is_none(), "{plain}"),
    }
    drop(inbox);

    let timeline: Value = get_json(
        &server,
        "/v1/conversations/conv-trace/messages",
        Some(ADMIN),
    )
    .await;
    assert_eq!(
        trace_of(&timeline["items"][0]["message"]["metadata"]),
        TRACE_ID
    );
    server.stop().await;
}

/// A seed-003 handoff from alice to bob (its metadata allows no `traceparent`).
fn handoff(n: u32, correlation: &str) -> Value {
    let path = format!(
        "{}/../../examples/seeds/003-python-valid-escalation.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut h: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let md = &mut h["metadata"];
    md["message_id"] = format!("00000000-0000-4000-8000-{n:012}").into();
    md["sender_id"] = "alice".into();
    md["recipient_id"] = "bob".into();
    md["correlation_id"] = correlation.into();
    md["task_id"] = correlation.into();
    md["expiration_time"] = "2099-01-01T00:00:00.000Z".into();
    h
}

async fn publish_handoff(server: &common::TestServer, body: &Value, traceparent: Option<&str>) {
    let mut r = client()
        .post(server.url("/v1/messages"))
        .bearer_auth(ALICE)
        .json(body);
    if let Some(tp) = traceparent {
        r = r.header("traceparent", tp);
    }
    let r = r.send().await.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
}

/// The next event of `inbox`: its message id and its `traceparent` field; acked.
async fn next_traced(
    server: &common::TestServer,
    inbox: &mut SseReader,
) -> (String, Option<String>) {
    let event = inbox.next().await;
    let data = event.json();
    assert!(
        data["message"]["metadata"].get("traceparent").is_none(),
        "the handoff document is delivered unchanged: {data}"
    );
    let (id, _) = delivered(&event);
    assert_eq!(settle(server, "bob", BOB, &id, "ack").await, 204);
    let tp = data.get("traceparent").map(|t| {
        let t = t.as_str().expect("traceparent is a string").to_owned();
        assert_eq!(t.len(), 55, "{t}");
        t
    });
    (id, tp)
}

fn trace_id(tp: &str) -> &str {
    tp.split('-').nth(1).unwrap()
}

#[tokio::test]
async fn a_handoffs_trace_is_kept_beside_it_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::db(dir.path());
    let config = common::config(30);
    let server = common::TestServer::start(&db, &config).await;
    publish_handoff(&server, &handoff(1, "conv-h"), Some(TRACEPARENT)).await;
    server.stop().await;

    let server = common::TestServer::start(&db, &config).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let (id, tp) = next_traced(&server, &mut inbox).await;
    assert_eq!(id, "00000000-0000-4000-8000-000000000001");
    let tp = tp.expect("the event carries the handoff's trace after a restart");
    assert_eq!(trace_id(&tp), TRACE_ID);
    if !cfg!(feature = "otlp") {
        assert_eq!(tp, TRACEPARENT);
    }

    // No header: the handoff joins the trace its correlation id had.
    publish_handoff(&server, &handoff(2, "conv-h"), None).await;
    let (id, tp) = next_traced(&server, &mut inbox).await;
    assert_eq!(id, "00000000-0000-4000-8000-000000000002");
    assert_eq!(trace_id(&tp.expect("the correlation's trace")), TRACE_ID);

    // A malformed header is ignored, as for chorus messages: published, in no known trace.
    let other = handoff(3, "conv-other");
    publish_handoff(&server, &other, Some("00-not-a-trace-01")).await;
    let (id, tp) = next_traced(&server, &mut inbox).await;
    assert_eq!(id, "00000000-0000-4000-8000-000000000003");
    match tp {
        // Exported spans start a trace at the hub for a message that carries none.
        Some(tp) if cfg!(feature = "otlp") => assert_ne!(trace_id(&tp), TRACE_ID),
        other => assert_eq!(other, None),
    }
    drop(inbox);

    let timeline: Value = get_json(&server, "/v1/tasks/conv-h/messages", Some(ADMIN)).await;
    let traces: Vec<&str> = timeline["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            trace_id(
                m["traceparent"]
                    .as_str()
                    .expect("the timeline shows the trace"),
            )
        })
        .collect();
    assert_eq!(traces, [TRACE_ID, TRACE_ID], "{timeline}");

    let doc: Value = get_json(&server, "/openapi.json", None).await;
    let field = &doc["components"]["schemas"]["InboxEvent"]["properties"]["traceparent"];
    assert!(field.is_object(), "InboxEvent documents traceparent: {doc}");
    server.stop().await;
}

#[cfg(feature = "otlp")]
mod otlp {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use super::*;

    const OTLP_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
    const OTLP_PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const HANDOFF_TRACE: &str = "5b8aa5a2d2c872e8321cf37308d69df2";
    const HANDOFF_PARENT: &str = "00-5b8aa5a2d2c872e8321cf37308d69df2-051581bf3cb55c13-01";

    /// A one-thread OTLP/HTTP collector on 127.0.0.1 keeping every request body.
    fn collector() -> (String, Arc<Mutex<Vec<u8>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        (format!("http://{addr}"), bodies)
    }

    fn serve(stream: std::net::TcpStream, kept: &Mutex<Vec<u8>>) {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        loop {
            let mut length = 0usize;
            let mut line = String::new();
            let mut first = true;
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                if first {
                    assert!(line.starts_with("POST /v1/traces "), "{line}");
                    first = false;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            kept.lock().unwrap().extend_from_slice(&body);
            let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
            if writer.write_all(answer.as_bytes()).is_err() {
                return;
            }
        }
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spans_reach_an_otlp_collector() {
        let (endpoint, bodies) = collector();
        let telemetry = chorus_server::telemetry::init_with(Some(&endpoint));
        let (_dir, server) = fresh(30).await;
        publish_traced(&server, "otlp-1", OTLP_PARENT).await;
        let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
        let event = inbox.next().await;
        let meta = &event.json()["message"]["metadata"];
        assert_eq!(trace_of(meta), OTLP_TRACE);
        assert_ne!(
            meta["traceparent"], OTLP_PARENT,
            "the stored context is the publish span's, a child of the caller's"
        );
        let (id, _) = delivered(&event);
        assert_eq!(settle(&server, "bob", BOB, &id, "ack").await, 204);
        // A handoff: its trace context is kept beside it, and its spans join the caller's trace.
        publish_handoff(&server, &handoff(40, "conv-otlp"), Some(HANDOFF_PARENT)).await;
        let (_, tp) = next_traced(&server, &mut inbox).await;
        assert_eq!(trace_id(&tp.expect("the handoff's trace")), HANDOFF_TRACE);
        drop(inbox);
        server.stop().await;

        let bytes_of = |hex: &str| -> Vec<u8> {
            (0..16)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect()
        };
        let trace_bytes = bytes_of(OTLP_TRACE);
        let handoff_bytes = bytes_of(HANDOFF_TRACE);
        // A span's name is field 5 of the protobuf Span: tag 0x2a, then the length.
        let named = |n: &str| [&[0x2a, n.len() as u8][..], n.as_bytes()].concat();
        let (publish, deliver, settle) = (named("publish"), named("deliver"), named("settle"));
        let expected: [&[u8]; 9] = [
            &publish,
            &deliver,
            &settle,
            b"messaging.system",
            b"chorus",
            b"messaging.operation.type",
            b"messaging.message.id",
            b"otlp-1",
            &trace_bytes,
        ];
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            tokio::task::block_in_place(|| telemetry.flush());
            let seen = bodies.lock().unwrap().clone();
            let missing: Vec<String> = expected
                .iter()
                .filter(|n| !contains(&seen, n))
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect();
            let count = |t: &[u8]| seen.windows(t.len()).filter(|w| *w == t).count();
            let (in_trace, in_handoff) = (count(&trace_bytes), count(&handoff_bytes));
            // publish, deliver and settle all belong to the caller's trace.
            if missing.is_empty() && in_trace >= 3 && in_handoff >= 3 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the collector did not receive {missing:?}, or the traces in {in_trace} and {in_handoff} span(s) only ({} bytes seen)",
                seen.len()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
