//! A fake OpenAI-compatible server for tests, on `127.0.0.1:0`.
//!
//! It answers every `POST` (whatever the path: `/v1/chat/completions`, `/v1/completions`, …)
//! with the next scripted [`Reply`], in order, and records what it received ([`Recorded`]).
//! When the script runs out it answers `500` with a body saying so, so a test that sends one
//! request too many fails with a clear error instead of hanging.
//!
//! ```ignore
//! mod support;
//! use support::fake_openai::{FakeOpenAi, Reply, chat};
//!
//! let fake = FakeOpenAi::start(vec![
//!     Reply::status(429).retry_after("0"),
//!     Reply::chat(vec![chat::text("Hel"), chat::text("lo"), chat::finish("stop"), chat::usage(12, 2)]),
//! ])
//! .await;
//! let base = fake.base_url(); // "http://127.0.0.1:PORT/v1"
//! // … run the client against `base` …
//! assert_eq!(fake.requests().len(), 2);
//! assert_eq!(fake.requests()[1].body["model"], "gpt-test");
//! ```
//!
//! Reply kinds: [`Reply::chat`] (a Chat Completions SSE stream of chunk objects, ended with
//! `data: [DONE]`), [`Reply::json`] (a non-streamed JSON body), [`Reply::completions`] (a raw
//! completions SSE stream, for Harmony; build chunks with [`completion::text`]),
//! [`Reply::status`] (an error status, with [`Reply::retry_after`] for a `Retry-After`
//! header). [`Reply::chunk_delay`] waits between streamed chunks (to measure time to first
//! token) and [`Reply::first_delay`] waits before the response starts (to trigger timeouts;
//! [`FakeOpenAi::max_in_flight`] then tells how many requests overlapped).
//! The [`chat`] and [`completion`] modules build chunks, including real-world quirks: tool-call
//! deltas split across chunks with the id only in the first, usage in a last chunk with empty
//! `choices`, `reasoning_content` deltas.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::Value;

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    body: Payload,
    status: u16,
    retry_after: Option<String>,
    chunk_delay: Duration,
    first_delay: Duration,
}

#[derive(Debug, Clone)]
enum Payload {
    Sse(Vec<String>),
    /// A `text/event-stream` body sent as these byte chunks, exactly.
    Raw(Vec<Vec<u8>>),
    Json(Value),
    Text(String),
}

impl Reply {
    /// A Chat Completions stream: each value is one `chat.completion.chunk`; `[DONE]` follows.
    pub fn chat(chunks: Vec<Value>) -> Self {
        Self::sse(chunks.iter().map(Value::to_string).collect())
    }

    /// A streamed answer calling tool `name` once (call id `id`), with `(prompt, completion)`
    /// token usage.
    pub fn call(id: &str, name: &str, arguments: &str, (prompt, completion): (u64, u64)) -> Self {
        Self::chat(vec![
            chat::role(),
            chat::call_start(0, id, name, arguments),
            chat::finish("tool_calls"),
            chat::usage(prompt, completion),
        ])
    }

    /// A streamed text answer, with `(prompt, completion)` token usage.
    pub fn answer(text: &str, (prompt, completion): (u64, u64)) -> Self {
        Self::chat(vec![
            chat::role(),
            chat::text(text),
            chat::finish("stop"),
            chat::usage(prompt, completion),
        ])
    }

    /// A raw completions stream (Harmony through `/v1/completions`); `[DONE]` follows.
    pub fn completions(chunks: Vec<Value>) -> Self {
        Self::chat(chunks)
    }

    /// Server-sent events with the given `data:` payloads, as written; `[DONE]` follows.
    pub fn sse(data: Vec<String>) -> Self {
        Self::new(Payload::Sse(data), 200)
    }

    /// A `text/event-stream` body written as `chunks`, byte for byte, one network write each
    /// (see [`split_inside_chars`]); [`Reply::chunk_delay`] waits between them.
    pub fn raw(chunks: Vec<Vec<u8>>) -> Self {
        Self::new(Payload::Raw(chunks), 200)
    }

    /// A non-streamed JSON body with status 200.
    pub fn json(body: Value) -> Self {
        Self::new(Payload::Json(body), 200)
    }

    /// An error status with a JSON error body in the OpenAI shape.
    pub fn status(status: u16) -> Self {
        let body = serde_json::json!({"error": {"message": format!("scripted status {status}"), "type": "fake"}});
        Self::new(Payload::Json(body), status)
    }

    /// A status with a plain-text body.
    pub fn text(status: u16, body: &str) -> Self {
        Self::new(Payload::Text(body.to_owned()), status)
    }

    /// Adds a `Retry-After` header (seconds, or an HTTP date).
    pub fn retry_after(mut self, value: &str) -> Self {
        self.retry_after = Some(value.to_owned());
        self
    }

    /// Waits this long between streamed chunks.
    pub fn chunk_delay(mut self, delay: Duration) -> Self {
        self.chunk_delay = delay;
        self
    }

    /// Waits this long before sending the status line.
    pub fn first_delay(mut self, delay: Duration) -> Self {
        self.first_delay = delay;
        self
    }

    fn new(body: Payload, status: u16) -> Self {
        Reply {
            body,
            status,
            retry_after: None,
            chunk_delay: Duration::ZERO,
            first_delay: Duration::ZERO,
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request path (`/v1/chat/completions`).
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The JSON body (`Value::Null` when the body was not JSON).
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    received: Mutex<Vec<Recorded>>,
    in_flight: Mutex<(usize, usize)>,
}

/// The running fake server; it stops when dropped.
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl FakeOpenAi {
    /// Starts a server on `127.0.0.1:0` that plays `script` in order.
    pub async fn start(script: Vec<Reply>) -> Self {
        let shared = Arc::new(Shared {
            script: Mutex::new(script.into()),
            received: Mutex::default(),
            in_flight: Mutex::default(),
        });
        let app = Router::new()
            .fallback(answer)
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        FakeOpenAi { addr, shared, task }
    }

    /// The base URL to configure clients with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Appends replies to the script.
    pub fn push(&self, reply: Reply) {
        self.shared.script.lock().unwrap().push_back(reply);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The most requests that were waiting out their [`Reply::first_delay`] at the same time
    /// (shows that a client sent requests in parallel).
    pub fn max_in_flight(&self) -> usize {
        self.shared.in_flight.lock().unwrap().1
    }

    /// How many scripted replies are left.
    pub fn remaining(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }
}

impl Drop for FakeOpenAi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    shared.received.lock().unwrap().push(Recorded {
        path: uri.path().to_owned(),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let next = shared.script.lock().unwrap().pop_front();
    let Some(reply) = next else {
        return Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from("fake server: no scripted reply left"))
            .unwrap();
    };
    {
        let mut flight = shared.in_flight.lock().unwrap();
        flight.0 += 1;
        flight.1 = flight.1.max(flight.0);
    }
    tokio::time::sleep(reply.first_delay).await;
    shared.in_flight.lock().unwrap().0 -= 1;
    let mut response = Response::builder().status(reply.status);
    if let Some(after) = &reply.retry_after {
        response = response.header(header::RETRY_AFTER, after);
    }
    match reply.body {
        Payload::Json(value) => response
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(value.to_string())),
        Payload::Text(text) => response
            .header(header::CONTENT_TYPE, "text/plain")
            .body(Body::from(text)),
        Payload::Sse(mut data) => {
            data.push("[DONE]".to_owned());
            let chunks = data
                .into_iter()
                .map(|item| format!("data: {item}\n\n").into_bytes())
                .collect();
            event_stream(response, chunks, reply.chunk_delay)
        }
        Payload::Raw(chunks) => event_stream(response, chunks, reply.chunk_delay),
    }
    .unwrap()
}

/// `chunks` as a `text/event-stream` body, one write each, `delay` between them.
fn event_stream(
    response: axum::http::response::Builder,
    chunks: Vec<Vec<u8>>,
    delay: Duration,
) -> Result<Response, axum::http::Error> {
    let events = futures::stream::unfold(
        (chunks.into_iter(), true),
        move |(mut rest, first)| async move {
            let item = rest.next()?;
            if !first && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            Some((Ok::<_, Infallible>(item), (rest, false)))
        },
    );
    response
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from_stream(events))
}

/// A server on `127.0.0.1:0` whose `GET route` (an axum path such as
/// `/v1/agents/{agent}/inbox`) answers `chunks` as a `text/event-stream` body, one write each,
/// and then keeps the stream open; its base URL (`http://127.0.0.1:PORT`) and task.
pub async fn event_stream_server(
    route: &str,
    chunks: Vec<Vec<u8>>,
) -> (String, tokio::task::JoinHandle<()>) {
    let app = Router::new().route(
        route,
        axum::routing::get(move || {
            let chunks = chunks.clone();
            async move {
                let body = futures::StreamExt::chain(
                    futures::stream::iter(chunks.into_iter().map(Ok::<_, Infallible>)),
                    futures::stream::pending(),
                );
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from_stream(body))
                    .unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let base = format!("http://{}", listener.local_addr().expect("local address"));
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.ok();
    });
    (base, task)
}

/// `text` cut into byte chunks so that every multi-byte character is split between two
/// chunks (its first byte ends one, its other bytes start the next).
pub fn split_inside_chars(text: &str) -> Vec<Vec<u8>> {
    let mut chunks = vec![Vec::new()];
    for c in text.chars() {
        let mut buf = [0; 4];
        let bytes = c.encode_utf8(&mut buf).as_bytes();
        chunks.last_mut().expect("a chunk").push(bytes[0]);
        if bytes.len() > 1 {
            chunks.push(bytes[1..].to_vec());
        }
    }
    chunks
}

/// Chat Completions chunk builders.
pub mod chat {
    use serde_json::{Value, json};

    fn chunk(delta: Value, finish: Value) -> Value {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "fake-model",
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        })
    }

    /// The first chunk: the assistant role with empty content.
    pub fn role() -> Value {
        chunk(json!({"role": "assistant", "content": ""}), Value::Null)
    }

    /// A content delta.
    pub fn text(delta: &str) -> Value {
        chunk(json!({"content": delta}), Value::Null)
    }

    /// A `reasoning_content` delta (vLLM, DeepSeek).
    pub fn reasoning(delta: &str) -> Value {
        chunk(json!({"reasoning_content": delta}), Value::Null)
    }

    /// A `reasoning` delta (Ollama, OpenRouter, newer vLLM).
    pub fn reasoning_field(delta: &str) -> Value {
        chunk(json!({"reasoning": delta}), Value::Null)
    }

    /// The first delta of tool call `index`: id, type, name and the first piece of arguments.
    pub fn call_start(index: u64, id: &str, name: &str, arguments: &str) -> Value {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments}}]}),
            Value::Null,
        )
    }

    /// A later delta of tool call `index`: only a piece of its arguments, no id.
    pub fn call_arguments(index: u64, arguments: &str) -> Value {
        chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}),
            Value::Null,
        )
    }

    /// The chunk with the finish reason and an empty delta.
    pub fn finish(reason: &str) -> Value {
        chunk(json!({}), json!(reason))
    }

    /// The usage chunk sent last with `stream_options.include_usage`: empty `choices`.
    pub fn usage(prompt: u64, completion: u64) -> Value {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}
        })
    }

    /// A whole non-streamed `chat.completion` with text content and usage.
    pub fn completion(content: &str, prompt: u64, completion: u64) -> Value {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}
        })
    }

    /// Splits `text` into content chunks of at most `size` characters.
    pub fn text_in_pieces(text: &str, size: usize) -> Vec<Value> {
        super::in_pieces(text, size, self::text)
    }
}

/// Raw completions chunk builders (Harmony text with special tokens written out, as vLLM
/// sends it with `skip_special_tokens: false`).
pub mod completion {
    use serde_json::{Value, json};

    /// A text delta.
    pub fn text(delta: &str) -> Value {
        json!({
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": 1_700_000_000,
            "model": "gpt-oss-fake",
            "choices": [{"index": 0, "text": delta, "finish_reason": null}]
        })
    }

    /// A delta given as token ids (vLLM with `return_token_ids`), with its text.
    pub fn tokens(ids: &[u32], text: &str) -> Value {
        json!({
            "id": "cmpl-fake",
            "object": "text_completion",
            "model": "gpt-oss-fake",
            "choices": [{"index": 0, "text": text, "token_ids": ids, "finish_reason": null}]
        })
    }

    /// The last chunk: a finish reason (and the stop token vLLM reports in `stop_reason`).
    pub fn finish(reason: &str, stop_reason: Option<u32>) -> Value {
        json!({
            "id": "cmpl-fake",
            "object": "text_completion",
            "model": "gpt-oss-fake",
            "choices": [{"index": 0, "text": "", "finish_reason": reason, "stop_reason": stop_reason}]
        })
    }

    /// The usage chunk with empty `choices`.
    pub fn usage(prompt: u64, completion: u64) -> Value {
        json!({
            "id": "cmpl-fake",
            "object": "text_completion",
            "model": "gpt-oss-fake",
            "choices": [],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                "total_tokens": prompt + completion}
        })
    }

    /// Splits Harmony text into deltas of at most `size` characters (special tokens may be
    /// cut in two, as a real stream of text can).
    pub fn text_in_pieces(text: &str, size: usize) -> Vec<Value> {
        super::in_pieces(text, size, self::text)
    }
}

/// `chunk` of each piece of at most `size` characters of `text`, in order.
fn in_pieces(text: &str, size: usize, chunk: fn(&str) -> Value) -> Vec<Value> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|piece| chunk(&piece.iter().collect::<String>()))
        .collect()
}
