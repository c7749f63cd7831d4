//! The inbox client of `chorus run --server` reads its event stream byte-safely: every
//! multi-byte character cut across two network chunks, `id:`/`retry:`/comments, multi-line
//! `data:`, and an `error` event that stops the flow.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use chorus_agent::flow::{FlowError, Remote, ServerSpec};
use serde_json::json;
use support::fake_openai::{event_stream_server, split_inside_chars};

const TEXT: &str = "Grüße aus Köln — 世界 🎉, ещё ✓";

/// A server whose inbox streams answer `chunks`, byte for byte.
async fn inbox_server(chunks: Vec<Vec<u8>>) -> (String, tokio::task::JoinHandle<()>) {
    event_stream_server("/v1/agents/{agent}/inbox", chunks).await
}

fn remote(base: &str) -> Remote {
    let spec = ServerSpec {
        tokens: HashMap::from([("ops".to_owned(), "token-ops".to_owned())]),
        idle_ms: Some(500),
        renew_ms: None,
    };
    Remote::new(base, &spec).unwrap()
}

#[tokio::test]
async fn every_multi_byte_character_cut_across_chunks_reaches_the_agent_whole() {
    let first = json!({"message_id": "m-1", "attempt": 1,
        "message": {"role": "user", "id": "m-1", "content": TEXT}});
    let second = json!({"message_id": "m-2", "attempt": 1,
        "message": {"role": "user", "id": "m-2", "content": format!("{TEXT} 2")}})
    .to_string();
    let (head, tail) = second.split_at(second.find("\"message\"").unwrap());
    let stream = format!(
        ": connected\nretry: 2000\n\nid: 1\nevent: message\ndata: {first}\n\n\
         id: 2\r\nevent: message\r\ndata: {head}\r\ndata: {tail}\r\n\r\n"
    );
    let chunks = split_inside_chars(&stream);
    assert!(chunks.iter().all(|c| std::str::from_utf8(c).is_err()));
    let (base, server) = inbox_server(chunks).await;
    let remote = remote(&base);
    let (mut inbox, readers) = remote.listen(&["ops".to_owned()]).unwrap();
    let mut texts = Vec::new();
    for _ in 0..2 {
        let delivery = tokio::time::timeout(Duration::from_secs(10), inbox.recv())
            .await
            .expect("a delivery in time")
            .expect("the channel is open")
            .expect("a delivery");
        assert_eq!(delivery.inbox, "ops");
        assert_eq!(delivery.message["id"], delivery.message_id.as_str());
        texts.push(delivery.message["content"].as_str().unwrap().to_owned());
    }
    assert_eq!(texts, [TEXT.to_owned(), format!("{TEXT} 2")]);
    readers.iter().for_each(|r| r.abort());
    server.abort();
}

#[tokio::test]
async fn an_error_event_stops_the_reader_with_its_text() {
    let stream = "event: error\ndata: inbox closed — ünknown agent\n\n";
    let (base, server) = inbox_server(split_inside_chars(stream)).await;
    let remote = remote(&base);
    let (mut inbox, _readers) = remote.listen(&["ops".to_owned()]).unwrap();
    let error = tokio::time::timeout(Duration::from_secs(10), inbox.recv())
        .await
        .expect("an answer in time")
        .expect("the channel is open")
        .unwrap_err();
    let FlowError::Failed(text) = error else {
        panic!("{error:?}")
    };
    assert!(text.contains("inbox closed — ünknown agent"), "{text}");
    server.abort();
}
