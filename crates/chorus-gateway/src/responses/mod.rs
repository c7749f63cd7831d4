//! `POST /v1/responses`, `GET` and `DELETE /v1/responses/{id}`: the Responses API over the
//! same prompt and reply as Chat Completions. Input items (messages, `function_call`,
//! `function_call_output`, reasoning) follow the stored conversation of `previous_response_id`;
//! the output is a list of items (reasoning, message, function calls), whole or as the event
//! sequence clients expect (`response.created` … `response.completed`).

pub mod request;

use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chorus_core::{ContentPart, FunctionCall, Message, Nullable, Role, ToolCall};
use futures::SinkExt;
use futures::channel::mpsc;
use serde_json::{Map, Value, json};
use tracing::Instrument;

use crate::error::ApiError;
use crate::generate::{Generated, Generation, mark_repairs};
use crate::prompt;
use crate::reply::{Delta, Finished};
use crate::state::Gateway;
use crate::stored::Stored;
use request::ResponsesRequest;

/// Serves one `POST /v1/responses`.
pub async fn create(gateway: Arc<Gateway>, headers: HeaderMap, body: Body) -> Response {
    let response = match serve(gateway.clone(), headers, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    gateway.metrics.request(response.status().as_u16());
    response
}

/// `GET /v1/responses/{id}`.
pub fn get(gateway: &Gateway, id: &str) -> Result<Json<Value>, ApiError> {
    gateway
        .responses
        .get(id)
        .map(|s| Json(s.response))
        .ok_or_else(|| missing(id))
}

/// `DELETE /v1/responses/{id}`.
pub fn delete(gateway: &Gateway, id: &str) -> Result<Json<Value>, ApiError> {
    if gateway.responses.delete(id) {
        Ok(Json(
            json!({"id": id, "object": "response", "deleted": true}),
        ))
    } else {
        Err(missing(id))
    }
}

fn missing(id: &str) -> ApiError {
    let mut e = ApiError::status(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "response_not_found",
        format!(
            "No response with id `{id}` is stored here (responses are kept in memory, up to max_stored_responses, and only with `store: true`)"
        ),
    );
    e.param = Some("/previous_response_id".into());
    e
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
    gateway.check_model(&request.chat.model)?;
    let earlier = match &request.previous_response_id {
        Some(id) => {
            gateway
                .responses
                .get(id)
                .ok_or_else(|| missing(id))?
                .messages
        }
        None => Vec::new(),
    };
    let input = request.chat.conversation.messages.clone();
    let full = request.conversation(&earlier);
    let mut chat = request.chat.clone();
    chat.conversation = full;
    let config = &gateway.config;
    let system = prompt::system(chat.effort, &config.knowledge_cutoff, &config.date);
    let prompt = prompt::render_request(&chat, system)?;
    let span = tracing::info_span!(
        "responses",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %chat.model,
        gen_ai.usage.input_tokens = prompt.tokens.len(),
        gen_ai.usage.output_tokens = tracing::field::Empty,
        stream = chat.stream,
    );
    let upstream_body = gateway.upstream.body(&prompt.tokens, &chat.sampling)?;
    let upstream = gateway
        .upstream
        .open(&upstream_body)
        .instrument(span.clone())
        .await?;
    let mut conversation = earlier;
    conversation.extend(input);
    let response = Draft {
        id: format!("resp_{}", uuid::Uuid::new_v4().simple()),
        created: chrono::Utc::now().timestamp(),
        request,
        prompt_tokens: prompt.tokens.len(),
        conversation,
    };
    if chat.stream {
        let (tx, rx) = mpsc::channel::<Result<String, std::convert::Infallible>>(32);
        let gateway = gateway.clone();
        tokio::spawn(
            async move {
                let _permit = permit;
                let generation = Generation::new(&gateway, &prompt, Vec::new(), upstream, started);
                response.stream(&gateway, generation, tx).await;
            }
            .instrument(span),
        );
        let mut out = Response::new(Body::from_stream(rx));
        out.headers_mut().insert(
            "content-type",
            HeaderValue::from_static("text/event-stream"),
        );
        out.headers_mut()
            .insert("cache-control", HeaderValue::from_static("no-cache"));
        return Ok(out);
    }
    let generated = Generation::new(&gateway, &prompt, Vec::new(), upstream, started)
        .run()
        .instrument(span)
        .await?;
    drop(permit);
    let body = response.complete(&gateway, &generated, output_items(&generated.finished));
    let mut out = (StatusCode::OK, Json(body)).into_response();
    mark_repairs(&mut out, [&generated.finished]);
    Ok(out)
}

/// A response before its output is known.
struct Draft {
    id: String,
    created: i64,
    request: ResponsesRequest,
    prompt_tokens: usize,
    conversation: Vec<Message>,
}

impl Draft {
    /// The response object with `status` and `output`.
    fn object(&self, status: &str, output: Vec<Value>) -> Value {
        let echo = &self.request.echo;
        let get = |key: &str, default: Value| echo.get(key).cloned().unwrap_or(default);
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": null,
            "incomplete_details": null,
            "instructions": self.request.instructions,
            "model": self.request.chat.model,
            "output": output,
            "parallel_tool_calls": get("parallel_tool_calls", json!(true)),
            "previous_response_id": self.request.previous_response_id,
            "reasoning": get("reasoning", json!({"effort": null, "summary": null})),
            "store": self.request.store,
            "temperature": get("temperature", Value::Null),
            "text": get("text", json!({"format": {"type": "text"}})),
            "tool_choice": get("tool_choice", json!("auto")),
            "tools": get("tools", json!([])),
            "top_p": get("top_p", Value::Null),
            "max_output_tokens": get("max_output_tokens", Value::Null),
            "truncation": get("truncation", json!("disabled")),
            "metadata": get("metadata", json!({})),
            "usage": null,
        })
    }

    /// The finished response, stored when asked.
    fn complete(&self, gateway: &Gateway, generated: &Generated, output: Vec<Value>) -> Value {
        let finished = &generated.finished;
        let cut =
            generated.upstream_reason.as_deref() == Some("length") && finished.calls.is_empty();
        let mut body = self.object(if cut { "incomplete" } else { "completed" }, output);
        if cut {
            body["incomplete_details"] = json!({"reason": "max_output_tokens"});
        }
        body["usage"] = json!({
            "input_tokens": self.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": finished.generated,
            "output_tokens_details": {"reasoning_tokens": finished.reasoning_tokens},
            "total_tokens": self.prompt_tokens + finished.generated,
        });
        if !finished.repairs.is_empty() {
            body["chorus"] = json!({"repairs": finished.repairs});
        }
        if self.request.store {
            let mut messages = self.conversation.clone();
            messages.push(assistant_message(finished));
            gateway.responses.put(
                self.id.clone(),
                Stored {
                    response: body.clone(),
                    messages,
                },
            );
        }
        body
    }

    /// Streams the response as events.
    async fn stream(self, gateway: &Gateway, mut generation: Generation<'_>, mut tx: Sender) {
        let mut events = Events::default();
        let created = self.object("in_progress", Vec::new());
        for kind in ["response.created", "response.in_progress"] {
            if events
                .send(&mut tx, kind, json!({"response": created}))
                .await
                .is_err()
            {
                return;
            }
        }
        let mut items = Items::default();
        loop {
            match generation.next().await {
                Ok(Some(deltas)) => {
                    for delta in &deltas {
                        for (kind, event) in items.push(delta) {
                            if events.send(&mut tx, kind, event).await.is_err() {
                                return;
                            }
                        }
                    }
                }
                Ok(None) => break,
                Err(error) => {
                    let _ = events.error(&mut tx, &error).await;
                    return;
                }
            }
        }
        let generated = match generation.finish() {
            Ok(generated) => generated,
            Err(error) => {
                let _ = events.error(&mut tx, &error).await;
                return;
            }
        };
        for delta in &generated.finished.tail {
            for (kind, event) in items.push(delta) {
                if events.send(&mut tx, kind, event).await.is_err() {
                    return;
                }
            }
        }
        for (kind, event) in items.close() {
            if events.send(&mut tx, kind, event).await.is_err() {
                return;
            }
        }
        let body = self.complete(gateway, &generated, items.output());
        let kind = if body["status"] == "incomplete" {
            "response.incomplete"
        } else {
            "response.completed"
        };
        let _ = events.send(&mut tx, kind, json!({"response": body})).await;
    }
}

type Sender = mpsc::Sender<Result<String, std::convert::Infallible>>;

/// The numbered events of one stream.
#[derive(Default)]
struct Events {
    sequence: u64,
}

impl Events {
    async fn send(
        &mut self,
        tx: &mut Sender,
        kind: &str,
        mut event: Value,
    ) -> Result<(), mpsc::SendError> {
        event["type"] = json!(kind);
        event["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        tx.send(Ok(format!("event: {kind}\ndata: {event}\n\n")))
            .await
    }

    async fn error(&mut self, tx: &mut Sender, error: &ApiError) -> Result<(), mpsc::SendError> {
        let body = error.body();
        let e = &body["error"];
        let event = json!({"code": e["code"], "message": e["message"], "param": e["param"]});
        self.send(tx, "error", event).await
    }
}

/// The output items, built from the deltas in the order they came.
#[derive(Default)]
struct Items {
    items: Vec<Value>,
    open: Option<usize>,
    calls: Vec<usize>,
}

impl Items {
    /// Adds a delta; the stream events it makes.
    fn push(&mut self, delta: &Delta) -> Vec<(&'static str, Value)> {
        let mut out = Vec::new();
        let kind = match delta {
            Delta::Reasoning(_) => "reasoning",
            Delta::Content(_) => "message",
            Delta::CallStart { .. } | Delta::CallArguments { .. } => "function_call",
        };
        let continues = matches!(delta, Delta::Reasoning(_) | Delta::Content(_))
            && self.open.is_some_and(|i| self.items[i]["type"] == kind);
        let index = match delta {
            Delta::CallArguments { index, .. } => match self.calls.get(*index) {
                Some(&item) => item,
                None => return out,
            },
            _ if continues => self.open.unwrap_or_default(),
            _ => {
                out.extend(self.close());
                let item = match delta {
                    Delta::Reasoning(_) => {
                        json!({"id": item_id("rs"), "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": ""}], "status": "in_progress"})
                    }
                    Delta::Content(_) => {
                        json!({"id": item_id("msg"), "type": "message", "role": "assistant", "status": "in_progress", "content": [{"type": "output_text", "text": "", "annotations": [], "logprobs": []}]})
                    }
                    Delta::CallStart { id, name, .. } => {
                        json!({"id": item_id("fc"), "type": "function_call", "call_id": id, "name": name, "arguments": "", "status": "in_progress"})
                    }
                    Delta::CallArguments { .. } => unreachable!("arguments follow their call"),
                };
                self.items.push(item);
                let index = self.items.len() - 1;
                self.open = Some(index);
                if matches!(delta, Delta::CallStart { .. }) {
                    self.calls.push(index);
                }
                let mut added = self.items[index].clone();
                if kind != "function_call" {
                    added["content"] = json!([]);
                }
                out.push((
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                ));
                if kind == "message" {
                    out.push(("response.content_part.added", json!({"item_id": self.items[index]["id"], "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})));
                }
                index
            }
        };
        let item_id = self.items[index]["id"].clone();
        match delta {
            Delta::Reasoning(text) | Delta::Content(text) => {
                let part = &mut self.items[index]["content"][0]["text"];
                *part = json!(format!("{}{text}", part.as_str().unwrap_or_default()));
                let kind = if kind == "message" {
                    "response.output_text.delta"
                } else {
                    "response.reasoning_text.delta"
                };
                let mut event = json!({"item_id": item_id, "output_index": index, "content_index": 0, "delta": text});
                if kind == "response.output_text.delta" {
                    event["logprobs"] = json!([]);
                }
                out.push((kind, event));
            }
            Delta::CallArguments { delta, .. } => {
                let args = &mut self.items[index]["arguments"];
                *args = json!(format!("{}{delta}", args.as_str().unwrap_or_default()));
                out.push((
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": index, "delta": delta}),
                ));
            }
            Delta::CallStart { .. } => {}
        }
        out
    }

    /// Closes the open item; the events that say so.
    fn close(&mut self) -> Vec<(&'static str, Value)> {
        let Some(index) = self.open.take() else {
            return Vec::new();
        };
        let item = &mut self.items[index];
        item["status"] = json!("completed");
        let id = item["id"].clone();
        let mut out = Vec::new();
        match item["type"].as_str() {
            Some("message") => {
                let text = item["content"][0]["text"].clone();
                out.push(("response.output_text.done", json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []})));
                out.push(("response.content_part.done", json!({"item_id": id, "output_index": index, "content_index": 0, "part": item["content"][0]})));
            }
            Some("reasoning") => {
                let text = item["content"][0]["text"].clone();
                out.push((
                    "response.reasoning_text.done",
                    json!({"item_id": id, "output_index": index, "content_index": 0, "text": text}),
                ));
            }
            _ => {
                out.push(("response.function_call_arguments.done", json!({"item_id": id, "output_index": index, "arguments": item["arguments"], "name": item["name"]})));
            }
        }
        out.push((
            "response.output_item.done",
            json!({"output_index": index, "item": self.items[index]}),
        ));
        out
    }

    /// The items, all closed.
    fn output(mut self) -> Vec<Value> {
        self.close();
        self.items
    }
}

/// The items of a reply read whole: reasoning, the answer, then the calls.
fn output_items(finished: &Finished) -> Vec<Value> {
    {
        let mut items = Vec::new();
        if let Some(reasoning) = &finished.reasoning {
            items.push(json!({"id": item_id("rs"), "type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": reasoning}], "status": "completed"}));
        }
        if let Some(content) = &finished.content {
            items.push(json!({"id": item_id("msg"), "type": "message", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": content, "annotations": [], "logprobs": []}]}));
        }
        for call in &finished.calls {
            items.push(json!({"id": item_id("fc"), "type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments, "status": "completed"}));
        }
        items
    }
}

fn item_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::new_v4().simple())
}

/// The reply as the chorus assistant message a later response continues from.
fn assistant_message(finished: &Finished) -> Message {
    let mut parts = Vec::new();
    if let Some(reasoning) = &finished.reasoning {
        parts.push(ContentPart::Reasoning(chorus_core::ReasoningPart {
            text: reasoning.clone(),
            ..Default::default()
        }));
    }
    if let Some(content) = &finished.content {
        parts.push(ContentPart::text(content.clone()));
    }
    let mut message = Message::with_parts(Role::Assistant, parts);
    if !finished.calls.is_empty() {
        let calls = finished
            .calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                kind: Some("function".into()),
                function: FunctionCall {
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                    extra: Map::new(),
                },
                extra: Map::new(),
            })
            .collect();
        message.tool_calls = Nullable::Value(calls);
    }
    message
}
