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
use crate::prompt::{self, Prompt};
use crate::reply::{Delta, Finished, Reply};
use crate::state::Gateway;
use crate::upstream::Streamed;
use request::ChatRequest;

/// The header listing the kinds of repair made to the model's output.
pub const REPAIRS_HEADER: &str = "x-chorus-repairs";

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
    let (finished, upstream_reason) = read_whole(&gateway, &request, &prompt, upstream, started)
        .instrument(span.clone())
        .await?;
    span.record("gen_ai.usage.output_tokens", finished.generated);
    drop(permit);
    let (usage, reason) = (
        usage(&prompt, &finished),
        finish_reason(&finished, upstream_reason.as_deref()),
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
    repairs_header(&mut response, &finished);
    Ok(response)
}

/// Reads the whole reply.
async fn read_whole(
    gateway: &Gateway,
    request: &ChatRequest,
    prompt: &Prompt,
    mut upstream: Streamed,
    started: Instant,
) -> Result<(Finished, Option<String>), ApiError> {
    let mut reply = Reply::new(&prompt.opened, request.stop.clone());
    let mut deltas = Vec::new();
    let mut first = None;
    while let Some(tokens) = upstream.next().await? {
        first = first.or_else(|| (!tokens.is_empty()).then(|| started.elapsed().as_secs_f64()));
        for id in tokens {
            reply.token(id, &mut deltas).map_err(unreadable)?;
        }
        // The whole reply is taken from the finished parse; its deltas are not needed.
        deltas.clear();
        if reply.stopped() {
            break;
        }
    }
    let mut finished = reply.finish(gateway.config.strict).map_err(unreadable)?;
    finished.generated = reported(&upstream, "completion_tokens").unwrap_or(finished.generated);
    gateway.count_repairs(&finished);
    let total = started.elapsed().as_secs_f64();
    gateway.metrics.timing(first, finished.generated, total);
    Ok((finished, upstream.finish_reason))
}

fn unreadable(e: crate::reply::Unreadable) -> ApiError {
    ApiError::upstream(
        "unreadable_output",
        format!(
            "the model's output cannot be read as Harmony: {}",
            e.message
        ),
        Some(e.raw),
    )
}

fn reported(upstream: &Streamed, key: &str) -> Option<usize> {
    upstream
        .usage
        .as_ref()?
        .get(key)?
        .as_u64()
        .map(|n| n as usize)
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

fn repairs_header(response: &mut Response, finished: &Finished) {
    if finished.repair_kinds.is_empty() {
        return;
    }
    if let Ok(value) = HeaderValue::from_str(&finished.repair_kinds.join(", ")) {
        response.headers_mut().insert(REPAIRS_HEADER, value);
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

    async fn run(self, mut upstream: Streamed, mut tx: Sender) {
        let first = self.chunk(json!({"role": "assistant", "content": ""}), None);
        if send(&mut tx, &first).await.is_err() {
            return;
        }
        let mut reply = Reply::new(&self.prompt.opened, self.request.stop.clone());
        let mut deltas = Vec::new();
        let mut first = None;
        let outcome: Result<(), ApiError> = async {
            while let Some(tokens) = upstream.next().await? {
                first = first
                    .or_else(|| (!tokens.is_empty()).then(|| self.started.elapsed().as_secs_f64()));
                for id in tokens {
                    reply.token(id, &mut deltas).map_err(unreadable)?;
                }
                for delta in deltas.drain(..) {
                    if send(&mut tx, &self.chunk(delta_json(&delta), None))
                        .await
                        .is_err()
                    {
                        return Ok(());
                    }
                }
                if reply.stopped() {
                    break;
                }
            }
            Ok(())
        }
        .await;
        if let Err(error) = outcome {
            let _ = send(&mut tx, &error.body()).await;
            return;
        }
        let mut finished = match reply.finish(self.gateway.config.strict) {
            Ok(finished) => finished,
            Err(e) => {
                let _ = send(&mut tx, &unreadable(e).body()).await;
                return;
            }
        };
        finished.generated = reported(&upstream, "completion_tokens").unwrap_or(finished.generated);
        tracing::Span::current().record("gen_ai.usage.output_tokens", finished.generated);
        self.gateway.count_repairs(&finished);
        let total = self.started.elapsed().as_secs_f64();
        self.gateway
            .metrics
            .timing(first, finished.generated, total);
        for delta in &finished.tail {
            if send(&mut tx, &self.chunk(delta_json(delta), None))
                .await
                .is_err()
            {
                return;
            }
        }
        let reason = finish_reason(&finished, upstream.finish_reason.as_deref());
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
