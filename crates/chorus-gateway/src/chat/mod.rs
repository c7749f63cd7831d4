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
    if request.choices > config.max_concurrent {
        return Err(ApiError::invalid(
            "/n",
            "invalid_value",
            format!(
                "`n` is {}, above this gateway's max_concurrent ({}): each choice is a generation of its own",
                request.choices, config.max_concurrent
            ),
        ));
    }
    let more = match request.choices {
        1 => None,
        n => Some(gateway.permits(n - 1)?),
    };
    // One upstream generation a choice, opened together: the engine shares the prompt's
    // cached prefix between them.
    let opened = futures::future::join_all((0..request.choices).map(|index| {
        let gateway = &gateway;
        let (prompt, request) = (&prompt, &request);
        async move {
            let body = gateway
                .upstream
                .body(&prompt.tokens, &request.sampling_of(index))?;
            gateway.upstream.open(&body).await
        }
    }))
    .instrument(span.clone())
    .await;
    let upstreams = opened.into_iter().collect::<Result<Vec<_>, _>>()?;
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
                let _permits = (permit, more);
                task.run(upstreams, tx).await;
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
    let generated = futures::future::join_all(upstreams.into_iter().map(|upstream| {
        Generation::new(&gateway, &prompt, request.stop.clone(), upstream, started).run()
    }))
    .instrument(span.clone())
    .await
    .into_iter()
    .collect::<Result<Vec<_>, _>>()?;
    drop((permit, more));
    let finished: Vec<&Finished> = generated.iter().map(|g| &g.finished).collect();
    let choices: Vec<Value> = generated
        .iter()
        .enumerate()
        .map(|(index, g)| choice(index, &g.finished, g.upstream_reason.as_deref()))
        .collect();
    let mut out = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": request.model,
        "choices": choices,
        "usage": usage(&prompt, &finished),
    });
    if let Some(repairs) = repairs(&finished) {
        out["chorus"] = json!({ "repairs": repairs });
    }
    let mut response = (StatusCode::OK, axum::Json(out)).into_response();
    mark_repairs(&mut response, finished);
    Ok(response)
}

/// Choice `index` of a whole reply: its message and finish reason.
fn choice(index: usize, finished: &Finished, upstream_reason: Option<&str>) -> Value {
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
    let reason = finish_reason(finished, upstream_reason);
    json!({"index": index, "message": message, "logprobs": null, "finish_reason": reason})
}

/// The repairs of every choice (`None` when there were none), each line of a choice past the
/// first prefixed with its index.
fn repairs(choices: &[&Finished]) -> Option<Vec<String>> {
    let mut all = Vec::new();
    for (index, finished) in choices.iter().enumerate() {
        all.extend(finished.repairs.iter().map(|line| match index {
            0 => line.clone(),
            _ => format!("choice {index}: {line}"),
        }));
    }
    (!all.is_empty()).then_some(all)
}

/// The usage of a reply: the prompt once, the tokens of every choice.
fn usage(prompt: &Prompt, choices: &[&Finished]) -> Value {
    let prompt_tokens = prompt.tokens.len();
    let generated: usize = choices.iter().map(|f| f.generated).sum();
    let reasoning: usize = choices.iter().map(|f| f.reasoning_tokens).sum();
    json!({
        "prompt_tokens": prompt_tokens,
        "completion_tokens": generated,
        "total_tokens": prompt_tokens + generated,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
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
    fn chunk(&self, index: usize, delta: Value, finish: Option<&str>) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.request.model,
            "choices": [{"index": index, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if self.request.include_usage {
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    /// Streams every choice, their chunks interleaved as their tokens come, then the usage
    /// and `[DONE]`. An error in any choice is sent and ends the stream.
    async fn run(self, upstreams: Vec<Streamed>, tx: Sender) {
        let streamed = futures::future::join_all(
            upstreams
                .into_iter()
                .enumerate()
                .map(|(index, upstream)| self.run_choice(index, upstream, tx.clone())),
        )
        .await;
        let Some(finished) = streamed.into_iter().collect::<Option<Vec<_>>>() else {
            return;
        };
        let mut tx = tx;
        if self.request.include_usage {
            let finished: Vec<&Finished> = finished.iter().collect();
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

    /// Streams choice `index` to its finish chunk: the finished reply, or `None` when the
    /// client left or an error was sent (the channel is then closed for every choice).
    async fn run_choice(
        &self,
        index: usize,
        upstream: Streamed,
        mut tx: Sender,
    ) -> Option<Finished> {
        let chunk = |delta: Value| self.chunk(index, delta, None);
        let first = chunk(json!({"role": "assistant", "content": ""}));
        send(&mut tx, &first).await.ok()?;
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
                        send(&mut tx, &chunk(delta_json(&delta))).await.ok()?;
                    }
                }
                Ok(None) => break,
                Err(error) => return fail(tx, &error).await,
            }
        }
        let Generated {
            finished,
            upstream_reason,
        } = match generation.finish() {
            Ok(generated) => generated,
            Err(error) => return fail(tx, &error).await,
        };
        for delta in &finished.tail {
            send(&mut tx, &chunk(delta_json(delta))).await.ok()?;
        }
        let reason = finish_reason(&finished, upstream_reason.as_deref());
        let mut last = self.chunk(index, json!({}), Some(reason));
        if let Some(repairs) = repairs(&[&finished]) {
            last["chorus"] = json!({ "repairs": repairs });
        }
        send(&mut tx, &last).await.ok()?;
        Some(finished)
    }
}

/// Sends `error` as the stream's last event and closes the stream for every choice.
async fn fail(mut tx: Sender, error: &ApiError) -> Option<Finished> {
    let _ = send(&mut tx, &error.body()).await;
    tx.close_channel();
    None
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
