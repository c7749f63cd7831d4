//! An agent's inbox: a Server-Sent Events stream resuming from `Last-Event-ID`, ack and nack.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use chorus_bus::Delivery;
use futures::{Stream, StreamExt, stream};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::document;
use crate::api::extract::ApiPath;
use crate::api::publish::body_error;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids::check_id;
use crate::state::AppState;
use crate::telemetry;

/// Deliveries fetched from the store at once for one stream.
const BATCH: usize = 32;
/// How long one wait for new messages lasts before it is started again.
const WAIT: Duration = Duration::from_secs(5);

/// The data of one `message` event.
#[derive(Debug, Serialize, ToSchema)]
pub struct InboxEvent {
    /// The message id; acknowledge with it.
    pub message_id: String,
    /// 1 on the first delivery, more on redeliveries.
    pub attempt: u32,
    /// The document exactly as published.
    #[schema(value_type = Object)]
    pub message: Value,
    /// The W3C trace context the message travels in, when known: the one in its metadata, or
    /// the one kept by the server for it (a handoff published with a `traceparent` header, or
    /// without one under a correlation id that had one). Pass it on as the `traceparent`
    /// header of what you publish in answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]
    pub traceparent: Option<String>,
}

/// Body of a nack.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NackBody {
    /// Milliseconds before the message is delivered again (0: at once).
    #[serde(default)]
    pub delay_ms: u64,
}

fn event(app: &AppState, seq: u64, d: &Delivery, traceparent: Option<String>) -> Event {
    let data = InboxEvent {
        message_id: d.envelope.id.clone(),
        attempt: d.attempt,
        message: document(&d.envelope.bytes),
        traceparent,
    };
    Event::default()
        .id(app.inboxes.event_id(seq))
        .event("message")
        .json_data(&data)
        .unwrap_or_else(|_| Event::default().event("error").data("unencodable message"))
}

/// The events of `agent`'s inbox after sequence number `after`: held deliveries first, then
/// new ones as they arrive; ends when the server stops or after reporting a store failure.
fn events(app: AppState, agent: String, after: u64) -> impl Stream<Item = Event> {
    let stopped = app.stopped();
    stream::unfold(Some((app, agent, after)), |state| async move {
        let (app, agent, mut after) = state?;
        loop {
            if let Some((seq, d)) = app.inboxes.next_after(&agent, after) {
                after = seq;
                let traceparent = telemetry::of_delivery(&app.traces, &d).await;
                let e = event(&app, seq, &d, traceparent);
                return Some((e, Some((app, agent, after))));
            }
            match app.bus.receive(&agent, BATCH, WAIT).await {
                Ok(deliveries) => {
                    for d in deliveries {
                        app.metrics.delivered.inc();
                        let tp = telemetry::of_delivery(&app.traces, &d).await;
                        let span =
                            telemetry::span_for("deliver", "receive", &agent, &d, tp.as_deref());
                        tracing::info!(
                            parent: &span,
                            %agent,
                            message_id = %d.envelope.id,
                            attempt = d.attempt,
                            correlation_id = %d.envelope.correlation_id.as_deref().unwrap_or("-"),
                            "delivered"
                        );
                        app.inboxes.hold(&agent, d);
                    }
                }
                Err(e) => {
                    // Event data may not hold a carriage return.
                    let text = e.to_string().replace('\r', " ");
                    return Some((Event::default().event("error").data(text), None));
                }
            }
        }
    })
    .take_until(stopped)
}

/// Streams `agent`'s inbox as Server-Sent Events (`event: message`, data [`InboxEvent`]).
///
/// Every delivery is held until acked or nacked; one not settled within the ack deadline is
/// delivered again. Reconnecting with `Last-Event-ID` sends again the held deliveries after
/// that event; without it, every held delivery.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent}/inbox",
    tag = "inbox",
    params(
        ("agent" = String, Path, description = "The agent id"),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received"),
    ),
    responses(
        (status = 200, description = "An endless stream of `message` events", content_type = "text/event-stream", body = InboxEvent),
        (status = 400, description = "An unsafe agent id", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's inbox", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn inbox(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(agent): ApiPath<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    check_id("the agent id", &agent)?;
    app.policy.may_read(&caller, &agent)?;
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let after = app.inboxes.resume_after(last);
    let stream = events(app, agent, after).map(Ok);
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// How a delivery is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Settle {
    /// Done: the message will not be delivered again.
    Ack,
    /// Not done: deliver it again after `delay_ms` (body `{"delay_ms": n}`, optional).
    Nack,
}

/// Acks or nacks a held delivery of `agent`'s inbox.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent}/inbox/{message_id}/{action}",
    tag = "inbox",
    params(
        ("agent" = String, Path, description = "The agent id"),
        ("message_id" = String, Path, description = "The id of the delivered message"),
        ("action" = Settle, Path, description = "`ack` or `nack`"),
    ),
    request_body(content = Option<NackBody>, content_type = "application/json", description = "For nack only; optional"),
    responses(
        (status = 204, description = "Settled"),
        (status = 400, description = "An unsafe id, an unknown action or a malformed body", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's inbox", body = ErrorBody),
        (status = 404, description = "No such delivery is held", body = ErrorBody),
        (status = 409, description = "The ack deadline passed; the message was delivered again", body = ErrorBody),
        (status = 429, description = "Too many requests from this agent; see Retry-After", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn settle(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath((agent, message_id, action)): ApiPath<(String, String, Settle)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<StatusCode, ApiError> {
    check_id("the agent id", &agent)?;
    check_id("the message id", &message_id)?;
    app.policy.may_read(&caller, &agent)?;
    if let Caller::Agent(me) = &caller {
        app.rate.check(me)?;
    }
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let delay = match action {
        Settle::Ack => Duration::ZERO,
        Settle::Nack => nack_delay(&bytes)?,
    };
    let (d, held_for) = app.inboxes.get(&agent, &message_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_held",
            format!(
                "no delivery of {message_id:?} is held for {agent:?}: it was never delivered over the inbox stream, or it was already settled"
            ),
        )
    })?;
    match action {
        Settle::Ack => {
            app.bus.ack(&d).await?;
            app.metrics.acked.inc();
            app.metrics.ack_seconds.observe(held_for.as_secs_f64());
        }
        Settle::Nack => {
            app.bus.nack(&d, delay).await?;
            app.metrics.nacked.inc();
        }
    }
    app.inboxes.settle(&agent, &d);
    let tp = telemetry::of_delivery(&app.traces, &d).await;
    let span = telemetry::span_for(
        "settle",
        if action == Settle::Ack { "ack" } else { "nack" },
        &agent,
        &d,
        tp.as_deref(),
    );
    tracing::info!(parent: &span, %agent, %message_id, action = ?action, "settled");
    Ok(StatusCode::NO_CONTENT)
}

/// The delay of a nack body: empty, or `{"delay_ms": n}`.
fn nack_delay(bytes: &[u8]) -> Result<Duration, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Duration::ZERO);
    }
    let body: NackBody = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(
            "malformed_json",
            format!("the body must be {{\"delay_ms\": <number>}} or empty: {e}"),
        )
    })?;
    Ok(Duration::from_millis(body.delay_ms))
}
