//! `POST /v1/chat/completions`: a request read ([`request`]), rendered ([`crate::prompt`]),
//! sent upstream, and its reply read ([`crate::reply`]) into a `chat.completion` or a stream of
//! `chat.completion.chunk`s.

pub mod request;

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::SinkExt;
use futures::channel::mpsc;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::error::ApiError;
use crate::generate::{Generated, Generation, mark_repairs};
use crate::prompt::{self, Prompt};
use crate::reply::{Delta, Finished};
use crate::state::Gateway;
use crate::upstream::Streamed;
use request::ChatRequest;

/// Serves one Chat Completions request.
pub async fn completions(gateway: Arc<Gateway>, headers: HeaderMap, body: Body) -> Response {
    let response = match serve(gateway.clone(), headers, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    gateway.metrics.request(response.status().as_u16());
    response
}

async fn serve(
    gateway: Arc<Gateway>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let started = Instant::now();
    gateway.authorize(&headers)?;
    let permit = gateway.permit()?;
    let value = gateway.read_json(body).await?;
    let request = request::read(value)?;
    gateway.check_model(&request.model)?;
    let config = &gateway.config;
    let system = prompt::system(request.effort, &config.knowledge_cutoff, &config.date);
    let prompt = prompt::render_request(&request, system)?;
    let span = tracing::info_span!(
        "chat",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %request.model,
        gen_ai.usage.input_tokens = prompt.tokens.len(),
        gen_ai.usage.output_tokens = tracing::field::Empty,
        stream = request.stream,
    );
    let body = gateway.upstream.body(&prompt.tokens, &request.sampling)?;
    let upstream = gateway
        .upstream
        .open(&body)
        .instrument(span.clone())
        .await?;
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let created = chrono::Utc::now().timestamp();
    if request.stream {
        let (tx, rx) = mpsc::channel::<Result<String, std::convert::Infallible>>(32);
        let task = Streaming {
            gateway: gateway.clone(),
            request,
            prompt,
            id,
            created,
            started,
        };
        tokio::spawn(
            async move {
                let _permit = permit;
                task.run(upstream, tx).await;
            }
            .instrument(span),
        );
        let mut response = Response::new(Body::from_stream(rx));
        let headers = response.headers_mut();
        headers.insert(
            "content-type",
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert("cache-control", HeaderValue::from_static("no-cache"));
        return Ok(response);
    }
    let generated = Generation::new(&gateway, &prompt, request.stop.clone(), upstream, started)
        .run()
        .instrument(span.clone())
        .await?;
    drop(permit);
    let finished = generated.finished;
    let (usage, reason) = (
        usage(&prompt, &finished),
        finish_reason(&finished, generated.upstream_reason.as_deref()),
    );
    let mut message = json!({"role": "assistant", "content": finished.content, "refusal": null});
    if let Some(reasoning) = &finished.reasoning {
        message["reasoning_content"] = json!(reasoning);
        message["reasoning"] = json!(reasoning);
    }
    if !finished.calls.is_empty() {
        message["tool_calls"] = finished
            .calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    let mut out = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": request.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": reason}],
        "usage": usage,
    });
    if !finished.repairs.is_empty() {
        out["chorus"] = json!({"repairs": finished.repairs});
    }
    let mut response = (StatusCode::OK, axum::Json(out)).into_response();
    mark_repairs(&mut response, &finished);
    Ok(response)
}

fn usage(prompt: &Prompt, finished: &Finished) -> Value {
    let prompt_tokens = prompt.tokens.len();
    json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": finished.generated,
        "total_tokens": prompt_tokens + finished.generated,
        "completion_tokens_details": {"reasoning_tokens": finished.reasoning_tokens},
    })
}

fn finish_reason(finished: &Finished, upstream: Option<&str>) -> &'static str {
    if !finished.calls.is_empty() {
        "tool_calls"
    } else if finished.stopped {
        "stop"
    } else if upstream == Some("length") {
        "length"
    } else {
        "stop"
    }
}

/// A streamed reply being written.
struct Streaming {
    gateway: Arc<Gateway>,
    request: ChatRequest,
    prompt: Prompt,
    id: String,
    created: i64,
    started: Instant,
}

type Sender = mpsc::Sender<Result<String, std::convert::Infallible>>;

impl Streaming {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.request.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if self.request.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    async fn run(self, upstream: Streamed, mut tx: Sender) {
        let first = self.chunk(json!({"role": "assistant", "content": ""}), None);
        if send(&mut tx, &first).await.is_err() {
            return;
        }
        let mut generation = Generation::new(
            &self.gateway,
            &self.prompt,
            self.request.stop.clone(),
            upstream,
            self.started,
        );
        loop {
            match generation.next().await {
                Ok(Some(deltas)) => {
                    for delta in deltas {
                        if send(&mut tx, &self.chunk(delta_json(&delta), None))
                            .await
                            .is_err()
                        {
                            return;
                        }
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    let _ = send(&mut tx, &error.body()).await;
                    return;
                }
            }
        }
        let Generated {
            finished,
            upstream_reason,
        } = match generation.finish() {
            Ok(generated) => generated,
            Err(error) => {
                let _ = send(&mut tx, &error.body()).await;
                return;
            }
        };
        for delta in &finished.tail {
            if send(&mut tx, &self.chunk(delta_json(delta), None))
                .await
                .is_err()
            {
                return;
            }
        }
        let reason = finish_reason(&finished, upstream_reason.as_deref());
        let mut last = self.chunk(json!({}), Some(reason));
        if !finished.repairs.is_empty() {
            last["chorus"] = json!({"repairs": finished.repairs});
        }
        if send(&mut tx, &last).await.is_err() {
            return;
        }
        if self.request.include_usage {
            let usage = json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.request.model,
                "choices": [],
                "usage": usage(&self.prompt, &finished),
            });
            if send(&mut tx, &usage).await.is_err() {
                return;
            }
        }
        let _ = tx.send(Ok("data: [DONE]\n\n".to_owned())).await;
    }
}

fn delta_json(delta: &Delta) -> Value {
    match delta {
        Delta::Reasoning(text) => json!({"reasoning_content": text, "reasoning": text}),
        Delta::Content(text) => json!({"content": text}),
        Delta::CallStart { index, id, name } => {
            json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]})
        }
        Delta::CallArguments { index, delta } => {
            json!({"tool_calls": [{"index": index, "function": {"arguments": delta}}]})
        }
    }
}

async fn send(tx: &mut Sender, value: &Value) -> Result<(), mpsc::SendError> {
    tx.send(Ok(format!("data: {value}\n\n"))).await
}
