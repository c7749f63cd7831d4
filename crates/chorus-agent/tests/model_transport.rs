//! The model clients' transport: streams cut inside characters, the full event-stream grammar,
//! silence (not length) as the stream's limit, and the token-limit field of reasoning models.

mod support;

use std::time::{Duration, Instant};

use chorus_agent::model::{
    EndpointConfig, HarmonyClient, MaxTokensField, ModelClient, ModelError, ModelRequest,
    OpenAiChatClient, StreamEvent,
};
use chorus_core::{Message, Role};
use serde_json::Value;
use support::fake_openai::{FakeOpenAi, Reply, chat, completion, split_inside_chars};

const TEXT: &str = "Grüße aus Köln — 世界 🎉, ещё ✓";

fn config(fake: &FakeOpenAi) -> EndpointConfig {
    EndpointConfig::new(fake.base_url())
        .with_retries(1, Duration::from_millis(5))
        .with_timeout(Duration::from_secs(10))
}

fn request(model: &str) -> ModelRequest {
    ModelRequest {
        model: model.into(),
        messages: vec![Message::new(Role::User, "Say hello.")],
        ..ModelRequest::default()
    }
}

/// An event stream of `chunks` using the whole grammar: a comment, `retry:`, `id:`, an explicit
/// `event: message`, CRLF line ends, and one chunk's JSON spread over several `data:` lines.
fn full_grammar(chunks: &[Value]) -> String {
    let mut stream = String::from(": keep-alive\nretry: 3000\n\n");
    for (i, chunk) in chunks.iter().enumerate() {
        let json = chunk.to_string();
        if i == 1 {
            let (head, tail) = json.split_at(json.find(",").unwrap() + 1);
            stream.push_str(&format!(
                "id: {i}\r\nevent: message\r\ndata: {head}\r\ndata: {tail}\r\n\r\n"
            ));
        } else {
            stream.push_str(&format!("id: {i}\ndata: {json}\n\n"));
        }
    }
    stream.push_str("data: [DONE]\n\n");
    stream
}

#[tokio::test]
async fn the_chat_client_reads_a_stream_cut_inside_every_character() {
    let mut chunks = vec![chat::role()];
    chunks.extend(chat::text_in_pieces(TEXT, 7));
    chunks.push(chat::finish("stop"));
    chunks.push(chat::usage(5, 9));
    let stream = full_grammar(&chunks);
    let pieces = split_inside_chars(&stream);
    assert!(pieces.iter().all(|p| std::str::from_utf8(p).is_err()));
    let fake = FakeOpenAi::start(vec![Reply::raw(pieces)]).await;
    let client = OpenAiChatClient::new(config(&fake));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reply = client
        .complete(&request("gpt-test"), Some(&tx))
        .await
        .unwrap();
    assert_eq!(reply.messages[0].text(), TEXT);
    assert!(!reply.messages[0].text().contains('\u{fffd}'));
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    drop(tx);
    let mut streamed = String::new();
    while let Some(event) = rx.recv().await {
        if let StreamEvent::Text { delta, .. } = event {
            streamed.push_str(&delta);
        }
    }
    assert_eq!(streamed, TEXT);
}

#[tokio::test]
async fn the_harmony_client_reads_a_stream_cut_inside_every_character() {
    let harmony = format!("<|channel|>final<|message|>{TEXT}<|return|>");
    let mut chunks = completion::text_in_pieces(&harmony, 6);
    chunks.push(completion::finish("stop", None));
    let pieces = split_inside_chars(&full_grammar(&chunks));
    let fake = FakeOpenAi::start(vec![Reply::raw(pieces)]).await;
    let client = HarmonyClient::new(config(&fake));
    let reply = client
        .complete(&request("gpt-oss-20b"), None)
        .await
        .unwrap();
    assert_eq!(reply.messages.last().unwrap().text(), TEXT);
}

#[tokio::test]
async fn an_error_event_fails_the_call_with_its_data() {
    let stream = format!(
        "data: {}\n\nevent: error\ndata: overloaded, try later\n\n",
        chat::role()
    );
    let fake = FakeOpenAi::start(vec![Reply::raw(vec![stream.into_bytes()])]).await;
    let client = OpenAiChatClient::new(config(&fake));
    let error = client
        .complete(&request("gpt-test"), None)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::Protocol(m) if m.contains("overloaded, try later")),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_slow_stream_that_never_goes_silent_outlives_both_timeouts() {
    let mut chunks = vec![chat::role()];
    chunks.extend(chat::text_in_pieces(TEXT, 3));
    chunks.push(chat::finish("stop"));
    let count = chunks.len() as u32;
    let delay = Duration::from_millis(120);
    let fake = FakeOpenAi::start(vec![Reply::chat(chunks).chunk_delay(delay)]).await;
    // The stream takes far longer in total than either limit; no gap reaches the silence limit.
    let client = OpenAiChatClient::new(
        config(&fake)
            .with_timeout(Duration::from_millis(400))
            .with_idle_timeout(Duration::from_millis(600)),
    );
    let started = Instant::now();
    let reply = client.complete(&request("gpt-test"), None).await.unwrap();
    assert!(started.elapsed() > delay * count, "{:?}", started.elapsed());
    assert_eq!(reply.messages[0].text(), TEXT);
}

#[tokio::test]
async fn a_stream_that_goes_silent_times_out_on_the_silence() {
    let chunks = vec![chat::role(), chat::text("Hel"), chat::text("lo")];
    let fake = FakeOpenAi::start(vec![
        Reply::chat(chunks).chunk_delay(Duration::from_secs(5)),
    ])
    .await;
    let client = OpenAiChatClient::new(
        config(&fake)
            .with_timeout(Duration::from_secs(10))
            .with_idle_timeout(Duration::from_millis(300)),
    );
    let started = Instant::now();
    let error = client
        .complete(&request("gpt-test"), None)
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::Timeout(300)), "{error:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn reasoning_models_get_max_completion_tokens() {
    let fake = FakeOpenAi::start(
        (0..4)
            .map(|_| Reply::json(chat::completion("ok", 1, 1)))
            .collect(),
    )
    .await;
    let client = OpenAiChatClient::new(config(&fake));
    for model in ["o3-mini", "gpt-5", "gpt-4o"] {
        let mut request = request(model);
        request.max_tokens = Some(64);
        client.complete(&request, None).await.unwrap();
    }
    let forced = OpenAiChatClient::new(
        config(&fake).with_max_tokens_field(MaxTokensField::MaxCompletionTokens),
    );
    let mut local = request("qwen3-8b");
    local.max_tokens = Some(32);
    forced.complete(&local, None).await.unwrap();
    let bodies: Vec<Value> = fake.requests().into_iter().map(|r| r.body).collect();
    for (body, (key, other, n)) in bodies.iter().zip([
        ("max_completion_tokens", "max_tokens", 64),
        ("max_completion_tokens", "max_tokens", 64),
        ("max_tokens", "max_completion_tokens", 64),
        ("max_completion_tokens", "max_tokens", 32),
    ]) {
        assert_eq!(body[key], n, "{body}");
        assert!(body.get(other).is_none(), "{body}");
    }
}
