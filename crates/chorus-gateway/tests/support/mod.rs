//! A fake raw completions engine (vLLM's `/v1/completions` as it streams) answering from a
//! script, recording every request; and a gateway in front of it, both on 127.0.0.1.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use chorus_gateway::GatewayConfig;
use serde_json::{Value, json};

/// How the fake engine answers one request.
#[derive(Clone, Debug)]
pub enum Answer {
    /// Streams `text` in pieces of `piece` characters, then `finish_reason` and usage.
    Text {
        text: String,
        piece: usize,
        finish: &'static str,
    },
    /// Streams `text` as token ids (vLLM's `return_token_ids`), one chunk per token.
    TokenIds { text: String },
    /// Answers `status` with `body`.
    Status { status: u16, body: String },
    /// Streams raw SSE text as it is.
    Raw(String),
}

impl Answer {
    /// The text streamed in pieces of 3 characters, ending with `stop`.
    pub fn text(text: &str) -> Answer {
        Answer::Text {
            text: text.into(),
            piece: 3,
            finish: "stop",
        }
    }
}

/// The fake engine's shared state.
#[derive(Default)]
pub struct Engine {
    answers: Mutex<VecDeque<Answer>>,
    requests: Mutex<Vec<Value>>,
}

impl Engine {
    /// Queues the next answers.
    pub fn script(&self, answers: impl IntoIterator<Item = Answer>) {
        self.answers.lock().unwrap().extend(answers);
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The prompt token ids of request `n`.
    pub fn prompt(&self, n: usize) -> Vec<u32> {
        let requests = self.requests();
        requests[n]["prompt"]
            .as_array()
            .expect("the prompt is token ids")
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect()
    }

    /// The prompt of request `n` as text.
    pub fn prompt_text(&self, n: usize) -> String {
        if let Some(text) = self.requests()[n]["prompt"].as_str() {
            return text.to_owned();
        }
        chorus_harmony::encoding()
            .decode_utf8(&self.prompt(n))
            .unwrap()
    }

    fn take(&self, body: &str) -> Answer {
        let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        self.requests.lock().unwrap().push(value);
        self.answers
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| Answer::text("<|channel|>final<|message|>(no script)"))
    }
}

/// The text of an answer, in its pieces.
fn pieces(answer: &Answer) -> Vec<String> {
    let Answer::Text { text, piece, .. } = answer else {
        panic!("llama.cpp and Ollama are scripted with text answers");
    };
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(*piece).map(|p| p.iter().collect()).collect()
}

/// llama.cpp server's `/completion`: SSE chunks with `content` and `tokens` (the whole reply
/// tokenized, three tokens a chunk, as an engine generates them), then `stop`.
async fn llama_cpp(State(engine): State<Arc<Engine>>, body: String) -> Response {
    let answer = engine.take(&body);
    let Answer::Text { text, .. } = answer else {
        panic!("llama.cpp is scripted with text answers");
    };
    let encoding = chorus_harmony::encoding();
    let mut out = String::new();
    for tokens in encoding.encode_with_special_tokens(&text).chunks(3) {
        let content = encoding.decode_utf8(tokens).unwrap_or_default();
        out.push_str(&format!(
            "data: {}\n\n",
            json!({"content": content, "tokens": tokens, "stop": false})
        ));
    }
    out.push_str(&format!(
        "data: {}\n\n",
        json!({"content": "", "stop": true, "stop_type": "limit", "tokens_predicted": 42})
    ));
    ([("content-type", "text/event-stream")], out).into_response()
}

/// Ollama's `/api/generate`: JSON lines with `response`, then `done`.
async fn ollama(State(engine): State<Arc<Engine>>, body: String) -> Response {
    let answer = engine.take(&body);
    let mut out = String::new();
    for piece in pieces(&answer) {
        out.push_str(&format!(
            "{}\n",
            json!({"model": "gpt-oss", "response": piece, "done": false})
        ));
    }
    out.push_str(&format!("{}\n", json!({"model": "gpt-oss", "response": "", "done": true, "done_reason": "stop", "eval_count": 17})));
    ([("content-type", "application/x-ndjson")], out).into_response()
}

async fn completions(State(engine): State<Arc<Engine>>, body: String) -> Response {
    let answer = engine.take(&body);
    let sse = |chunks: Vec<Value>| {
        let mut out = String::new();
        for chunk in chunks {
            out.push_str(&format!("data: {chunk}\n\n"));
        }
        out.push_str("data: [DONE]\n\n");
        out
    };
    let body = match answer {
        Answer::Status { status, body } => {
            return (StatusCode::from_u16(status).unwrap(), body).into_response();
        }
        Answer::Raw(text) => text,
        Answer::Text {
            text,
            piece,
            finish,
        } => {
            let chars: Vec<char> = text.chars().collect();
            let mut chunks: Vec<Value> = chars
                .chunks(piece.max(1))
                .map(|p| json!({"id": "cmpl-1", "object": "text_completion", "choices": [{"index": 0, "text": p.iter().collect::<String>(), "finish_reason": null}]}))
                .collect();
            chunks.push(json!({"id": "cmpl-1", "choices": [{"index": 0, "text": "", "finish_reason": finish}]}));
            chunks.push(json!({"id": "cmpl-1", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}));
            sse(chunks)
        }
        Answer::TokenIds { text } => {
            let ids = chorus_harmony::encoding().encode_with_special_tokens(&text);
            let mut chunks: Vec<Value> = ids
                .iter()
                .map(|id| json!({"choices": [{"index": 0, "text": "", "token_ids": [id], "finish_reason": null}]}))
                .collect();
            chunks.push(json!({"choices": [{"index": 0, "text": "", "token_ids": [], "finish_reason": "stop"}]}));
            sse(chunks)
        }
    };
    ([("content-type", "text/event-stream")], body).into_response()
}

/// A fake engine and a gateway in front of it.
pub struct Stack {
    pub engine: Arc<Engine>,
    pub gateway: String,
    pub http: reqwest::Client,
}

async fn listen(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}")
}

impl Stack {
    /// Starts both, the gateway with `config` (its upstream set to the engine).
    pub async fn start(mut config: GatewayConfig) -> Stack {
        let engine = Arc::new(Engine::default());
        let upstream = listen(
            Router::new()
                .route("/v1/completions", post(completions))
                .route("/completion", post(llama_cpp))
                .route("/api/generate", post(ollama))
                .with_state(engine.clone()),
        )
        .await;
        config.upstream = match config.upstream_kind {
            chorus_gateway::UpstreamKind::OpenaiCompletions => format!("{upstream}/v1"),
            _ => upstream,
        };
        let gateway = listen(chorus_gateway::router(config).unwrap()).await;
        Stack {
            engine,
            gateway,
            http: reqwest::Client::new(),
        }
    }

    /// A gateway with the default settings, the date fixed.
    pub async fn default() -> Stack {
        Stack::start(config()).await
    }

    /// POSTs `body` to `/v1/chat/completions`.
    pub async fn chat(&self, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}/v1/chat/completions", self.gateway))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// POSTs `body` to `path`.
    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.gateway))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// POSTs a streaming `body` to `/v1/responses`: its events as (`event:` name, data).
    pub async fn response_events(&self, body: &Value) -> Vec<(String, Value)> {
        let text = self.post("/v1/responses", body).await.text().await.unwrap();
        text.split("\n\n")
            .filter(|e| !e.trim().is_empty())
            .map(|event| {
                let mut name = String::new();
                let mut data = Value::Null;
                for line in event.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = n.to_owned();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(d).unwrap();
                    }
                }
                (name, data)
            })
            .collect()
    }

    /// POSTs a streaming `body` and returns its `data:` payloads (`[DONE]` included).
    pub async fn chat_stream(&self, body: &Value) -> (u16, Vec<String>) {
        let response = self.chat(body).await;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        let data = text
            .split("\n\n")
            .filter_map(|event| event.strip_prefix("data: "))
            .map(str::to_owned)
            .collect();
        (status, data)
    }
}

/// The settings of the tests: model `gpt-oss`, the date fixed.
pub fn config() -> GatewayConfig {
    GatewayConfig {
        upstream: "http://127.0.0.1:1/v1".into(),
        date: "2026-12-02".into(),
        ..GatewayConfig::default()
    }
}
