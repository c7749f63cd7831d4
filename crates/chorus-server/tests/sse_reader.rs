//! The tests' inbox reader (on chorus-agent's shared SSE reader) against a stream cut inside
//! every multi-byte character, with comments, `id:`, `retry:` and multi-line `data:`; and
//! against the real server, a message of non-ASCII text read back whole.

mod common;

/// The fake model server of chorus-agent's tests, for its chunk splitter.
#[allow(dead_code)]
#[path = "../../chorus-agent/tests/support/fake_openai.rs"]
mod fake_openai;

use common::{ALICE, BOB, PATIENCE, SseReader, fresh, message, publish};
use fake_openai::{event_stream_server, split_inside_chars};

const TEXT: &str = "Grüße aus Köln — 世界 🎉, ещё ✓";

#[tokio::test]
async fn the_reader_joins_every_character_cut_across_chunks() {
    let stream = format!(
        ": hello\nretry: 1000\n\nid: 41\nevent: message\ndata: {{\"text\": \"{TEXT}\"}}\n\n\
         id: 42\r\ndata: {TEXT}\r\ndata: ✓\r\n\r\n"
    );
    let chunks = split_inside_chars(&stream);
    assert!(chunks.iter().all(|c| std::str::from_utf8(c).is_err()));
    let (base, server) = event_stream_server("/v1/agents/{agent}/inbox", chunks).await;
    let url = format!("{base}/v1/agents/bob/inbox");
    let mut reader = SseReader::try_open_url(&url, BOB, None).await.unwrap();
    let first = reader.next().await;
    assert_eq!(first.id.as_deref(), Some("41"));
    assert_eq!(first.event.as_deref(), Some("message"));
    assert_eq!(first.json()["text"], TEXT);
    let second = reader.next().await;
    assert_eq!(second.id.as_deref(), Some("42"));
    assert_eq!(second.data, format!("{TEXT}\n✓"));
    assert!(
        reader
            .next_within(std::time::Duration::from_millis(200))
            .await
            .is_none()
    );
    server.abort();
}

#[tokio::test]
async fn non_ascii_text_comes_back_whole_from_the_server() {
    let (_dir, server) = fresh(30).await;
    let mut inbox = SseReader::open(&server, "bob", BOB, None).await;
    let long: String = TEXT.repeat(200);
    let sent = publish(&server, ALICE, &message("m-utf8", "alice", "bob", &long)).await;
    assert!(sent.status().is_success(), "{}", sent.status());
    let event = inbox.next_within(PATIENCE).await.expect("a delivery");
    assert_eq!(event.json()["message"]["content"], long.as_str());
    server.stop().await;
}
