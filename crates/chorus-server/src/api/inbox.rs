//! An agent's inbox: a Server-Sent Events stream resuming from `Last-Event-ID`, ack and nack.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use chorus_bus::Delivery;
use futures::{Stream, StreamExt, stream};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, IntoResponses, ToSchema};

use crate::api::extract::{ApiPath, ApiQuery};
use crate::api::publish::body_error;
use crate::api::{document, frames};
use crate::auth::Caller;
use crate::config::MAX_IN_FLIGHT;
use crate::error::{ApiError, ErrorBody};
use crate::history::{Event, Step};
use crate::ids::check_id;
use crate::inbox::{Claim, HeldCopy, Resume, StreamWakers};
use crate::state::AppState;
use crate::streams::StreamTicket;
use crate::telemetry;

/// Deliveries fetched from the store at once for one stream.
const BATCH: usize = 32;
/// The longest a stream at its `max_in_flight` waits before it looks again; it wakes sooner on a
/// settle, or when the first lease of what it holds ends (which frees a place without one).
const WAIT: Duration = Duration::from_secs(5);
/// How long one wait for new messages lasts before it is started again: the store wakes the
/// stream when one arrives, so an idle stream costs nothing in between.
const IDLE_WAIT: Duration = Duration::from_secs(30);

/// How long an inbox stream waits before it reads again from a store that did not answer (times
/// the failures in a row, up to four).
const OUTAGE_PAUSE: Duration = Duration::from_millis(250);

/// The data of one `message` event.
#[derive(Debug, Serialize, ToSchema)]
pub struct InboxEvent<'a> {
    /// The message id; acknowledge with it.
    pub message_id: &'a str,
    /// 1 on the first delivery, more on redeliveries.
    pub attempt: u32,
    /// The document exactly as published.
    #[schema(value_type = Object)]
    pub message: Cow<'a, RawValue>,
    /// The W3C trace context the message travels in, when known: the one in its metadata, or
    /// the one kept by the server for it (a handoff published with a `traceparent` header, or
    /// without one under a correlation id that had one). Pass it on as the `traceparent`
    /// header of what you publish in answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")]
    pub traceparent: Option<&'a str>,
}

/// Body of a nack.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NackBody {
    /// Milliseconds before the message is delivered again (0: at once).
    #[serde(default)]
    pub delay_ms: u64,
}

/// Body of a dead-letter settle.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadLetterSettle {
    /// Why the handler gave up (kept in the dead letter's reason).
    #[serde(default)]
    pub error: String,
}

/// Appends to `frame` the `message` event of held delivery `seq`, sent on `stream`.
fn push_event(
    frame: &mut Vec<u8>,
    app: &AppState,
    (stream, seq): (u64, u64),
    d: &Delivery,
    traceparent: Option<&str>,
) {
    let data = InboxEvent {
        message_id: &d.envelope.id,
        attempt: d.attempt,
        message: document(&d.envelope.bytes),
        traceparent,
    };
    frames::push_json(frame, &app.inboxes.event_id(stream, seq), "message", &data);
}

/// One open inbox stream: a competing consumer of the inbox that holds at most
/// `max_in_flight` unsettled deliveries; what it holds is handed back when it is dropped.
struct Reader {
    app: AppState,
    agent: String,
    /// Who reads: the caller's agent id, or `admin`.
    reader: String,
    stream: u64,
    /// Wakes the stream when a held delivery of its inbox is settled or handed back.
    wakers: Arc<StreamWakers>,
    /// The stream and event a reconnecting client read last (`Last-Event-ID`).
    resumed: Option<Resume>,
    max_in_flight: usize,
    /// Deliveries taken for this stream and not yet sent, with their trace contexts.
    pending: Vec<(u64, Delivery, Option<String>)>,
    /// Counts the stream against its caller's `max_streams_per_agent` while it is open.
    _ticket: Option<StreamTicket>,
    /// Whether the first events went out (with the `retry:` field before them).
    started: bool,
    /// How many reads in a row found the store unavailable (the stream waits, then reads again).
    outage: u32,
}

/// The `retry:` field of a stream's first event block: how long an `EventSource` waits before
/// it reconnects (with `Last-Event-ID`) after the connection drops, half the hand-back wait
/// (`hand_back_ms`). Its default (3 s in Chromium and in npm's `eventsource`, 5 s in Firefox)
/// is past the hand-back wait's default of 1 s: what the client had read would go back to the
/// store and come again as a new attempt while its handler still works on it. (In the first
/// event's block, not a block of its own: a block with no data dispatches nothing in
/// EventSource, but simpler readers may take it for an event.)
fn retry_field(hand_back: Duration) -> String {
    format!("retry: {}\n", hand_back.as_millis() / 2)
}

impl Drop for Reader {
    fn drop(&mut self) {
        if !self.app.inboxes.release(&self.agent, self.stream) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (app, agent) = (self.app.clone(), self.agent.clone());
        runtime.spawn(async move {
            tokio::time::sleep(app.hand_back).await;
            for (d, stream) in app.inboxes.orphans(&agent) {
                let message_id = &d.envelope.id;
                if let Err(e) = app.bus.nack(&d, Duration::ZERO).await {
                    // Still leased in the store: it comes back after the ack wait.
                    tracing::warn!(%agent, error = %e, "a held delivery was not handed back to the store");
                    continue;
                }
                tracing::info!(%agent, %message_id, attempt = d.attempt, stream, "handed back to the store: its stream closed and no other stream took it");
                let event = Event::new(&agent, d.attempt, Step::HandedBack, stream);
                app.history.record(message_id, event);
            }
        });
    }
}

impl Reader {
    /// The next events, written together: a held delivery no other stream has, else new
    /// deliveries from the bus, waiting while the stream holds `max_in_flight`; an error event
    /// ends the stream.
    async fn next(&mut self) -> Result<Bytes, Bytes> {
        loop {
            if !self.pending.is_empty() {
                // One chunk for what one fetch took: one write, where an event each cost the
                // server a chunk and a write and the reader a read.
                let size: usize = (self.pending.iter())
                    .map(|(_, d, _)| d.envelope.bytes.len() + d.envelope.id.len() + 200)
                    .sum();
                let mut frame = Vec::with_capacity(size + 16);
                if !self.started {
                    self.started = true;
                    frame.extend_from_slice(retry_field(self.app.hand_back).as_bytes());
                }
                for (seq, d, traceparent) in self.pending.drain(..) {
                    push_event(
                        &mut frame,
                        &self.app,
                        (self.stream, seq),
                        &d,
                        traceparent.as_deref(),
                    );
                }
                return Ok(frame.into());
            }
            let app = self.app.clone();
            let wakers = self.wakers.clone();
            let handed_back = wakers.handed_back.notified();
            tokio::pin!(handed_back);
            handed_back.as_mut().enable();
            let (agent, stream, max) = (&self.agent, self.stream, self.max_in_flight);
            // Counted by the claim, which may have taken back what the client had read.
            let held = match app.inboxes.claim(agent, stream, self.resumed, max) {
                Claim::Taken(seq, d, tp, from) => {
                    if from != stream {
                        let message_id = &d.envelope.id;
                        tracing::info!(agent = %self.agent, %message_id, attempt = d.attempt, from_stream = from, stream, reader = %self.reader, "handed over to another stream");
                        let mut sent =
                            Event::new(agent, d.attempt, Step::Sent, stream).by(&self.reader);
                        sent.from_stream = Some(from);
                        app.history.record(message_id, sent);
                    }
                    self.pending.push((seq, d, tp));
                    continue;
                }
                Claim::Holds(held) => held,
            };
            if held >= max {
                // Armed before the second look, so that a settle in between is not missed.
                let settled = wakers.settled.notified();
                tokio::pin!(settled);
                settled.as_mut().enable();
                if app.inboxes.in_flight(agent, stream) >= max {
                    // Until a settle, the first lease of what it holds ends, or a hand-back
                    // (which may bring back what a resumed stream's client read).
                    let lease_end = app.inboxes.next_lease_end(agent, stream);
                    let until =
                        lease_end.map_or(WAIT, |at| at.saturating_duration_since(Instant::now()));
                    tokio::select! {
                        _ = tokio::time::timeout(until.min(WAIT), settled) => {}
                        () = handed_back => {}
                    }
                }
                continue;
            }
            let want = BATCH.min(self.max_in_flight - held);
            let deliveries = match app.bus.receive(&self.agent, want, Duration::ZERO).await {
                Ok(deliveries) => {
                    if self.outage > 0 {
                        tracing::info!(agent = %self.agent, "an inbox stream reads from the store again");
                        self.outage = 0;
                    }
                    deliveries
                }
                Err(e) if e.is_unavailable() => {
                    self.outage += 1;
                    // A lost store (a restart, a dropped connection) comes back: the stream
                    // stays open and tries again, saying so once as an SSE comment.
                    let pause = OUTAGE_PAUSE * self.outage.min(4);
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        () = handed_back => {}
                    }
                    if self.outage == 1 {
                        tracing::warn!(agent = %self.agent, error = %e, "an inbox stream waits for the store");
                        return Ok(frames::comment(&format!("store unavailable, waiting: {e}")));
                    }
                    continue;
                }
                Err(e) => return Err(frames::text("error", &e.to_string())),
            };
            if !deliveries.is_empty() {
                self.take(deliveries).await;
                continue;
            }
            tokio::select! {
                () = app.bus.wait_for(&self.agent, IDLE_WAIT) => {}
                () = handed_back => {}
            }
        }
    }

    /// Holds new `deliveries` for this stream, to be sent in order.
    async fn take(&mut self, deliveries: Vec<Delivery>) {
        let app = &self.app;
        let traces = telemetry::of_deliveries(&app.traces, &deliveries).await;
        for (d, tp) in deliveries.into_iter().zip(traces) {
            app.metrics.delivered.inc();
            let span = telemetry::span_for("deliver", "receive", &self.agent, &d, tp.as_deref());
            tracing::debug!(
                parent: &span,
                agent = %self.agent,
                message_id = %d.envelope.id,
                attempt = d.attempt,
                correlation_id = %d.envelope.correlation_id.as_deref().unwrap_or("-"),
                "delivered"
            );
            if d.attempt > 1 {
                tracing::info!(agent = %self.agent, message_id = %d.envelope.id, attempt = d.attempt, stream = self.stream, reader = %self.reader, "delivered again");
            }
            let sent = Event::new(&self.agent, d.attempt, Step::Sent, self.stream).by(&self.reader);
            app.history.record(&d.envelope.id, sent);
            let seq = app
                .inboxes
                .hold(&self.agent, self.stream, d.clone(), tp.clone());
            self.pending.push((seq, d, tp));
        }
    }
}

/// The events of `agent`'s inbox for one stream: held deliveries first (but those its client
/// read before it reconnected, from `resumed`), then new
/// ones as they arrive; ends when the server stops or after reporting a store failure.
fn events(
    app: AppState,
    agent: String,
    reader: String,
    resumed: Option<Resume>,
    max_in_flight: usize,
    ticket: Option<StreamTicket>,
) -> impl Stream<Item = Bytes> + Send + 'static {
    let stopped = app.stopped();
    let (stream, wakers) = app.inboxes.open_stream(&agent, resumed);
    let reader = Reader {
        app,
        agent,
        reader,
        stream,
        wakers,
        resumed,
        max_in_flight,
        pending: Vec::new(),
        _ticket: ticket,
        started: false,
        outage: 0,
    };
    stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        match reader.next().await {
            Ok(e) => Some((e, Some(reader))),
            Err(e) => Some((e, None)),
        }
    })
    .take_until(stopped)
}

/// How an inbox is read.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ReadOptions {
    /// Unsettled deliveries this stream may hold at once (1 to 1000; default: the agent's
    /// `max_in_flight` in `chorus.toml`, else the server's, 16 unless set). The stream sends the
    /// next message once one is acked or nacked.
    pub max_in_flight: Option<usize>,
}

/// Streams `agent`'s inbox as Server-Sent Events (`event: message`, data [`InboxEvent`]).
///
/// Every delivery is held until acked or nacked; one not settled within the ack deadline is
/// delivered again. Reconnecting with `Last-Event-ID` keeps, unsent, what the client read up to
/// that event and sends the rest; without it, every held delivery comes again. The first events
/// carry `retry:` (500 ms unless `hand_back_ms` is set): an `EventSource` reconnects within half
/// the time a closed stream's deliveries wait for it.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent}/inbox",
    tag = "inbox",
    params(
        ("agent" = String, Path, description = "The agent id"),
        ("Last-Event-ID" = Option<String>, Header, description = "The id of the last event received"),
        ReadOptions,
    ),
    responses(
        (status = 200, description = "An endless stream of `message` events", content_type = "text/event-stream", body = InboxEvent),
        (status = 400, description = "An unsafe agent id", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's inbox", body = ErrorBody),
        (status = 429, description = "The agent holds `max_streams_per_agent` inbox streams open already (`too_many_streams`, with Retry-After)", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn inbox(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(agent): ApiPath<String>,
    ApiQuery(options): ApiQuery<ReadOptions>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    check_id("the agent id", &agent)?;
    app.policy.may_read(&caller, &agent)?;
    let max_in_flight = match options.max_in_flight {
        Some(n @ 1..=MAX_IN_FLIGHT) => n,
        Some(n) => {
            return Err(ApiError::bad_request(
                "bad_query",
                format!("max_in_flight is {n}; it must be from 1 to {MAX_IN_FLIGHT}"),
            ));
        }
        None => app.policy.max_in_flight(&agent),
    };
    let ticket = match &caller {
        Caller::Agent(me) => Some(app.streams.open(me)?),
        _ => None,
    };
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok());
    let resumed = app.inboxes.resume_after(last);
    let reader = caller.name().to_owned();
    Ok(frames::response(events(
        app,
        agent,
        reader,
        resumed,
        max_in_flight,
        ticket,
    )))
}

/// How a delivery is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Settle {
    /// Done: the message will not be delivered again.
    Ack,
    /// Not done: deliver it again after `delay_ms` (body `{"delay_ms": n}`, optional).
    Nack,
    /// Still working: the ack deadline starts again (as JetStream's `+WPI`).
    #[serde(rename = "in-progress")]
    InProgress,
    /// Given up: the message becomes a dead letter at once (body `{"error": "..."}`).
    #[serde(rename = "dead-letter")]
    DeadLetter,
}

impl Settle {
    fn name(self) -> &'static str {
        match self {
            Settle::Ack => "ack",
            Settle::Nack => "nack",
            Settle::InProgress => "in-progress",
            Settle::DeadLetter => "dead-letter",
        }
    }
}

/// A settle with what its body says: the delay of a nack, the error of a dead letter.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// Done.
    Ack,
    /// Deliver again after the delay.
    Nack(Duration),
    /// Still working.
    InProgress,
    /// Given up, with the handler's error.
    DeadLetter(String),
}

impl Action {
    /// The path word this action is named by.
    fn word(&self) -> Settle {
        match self {
            Action::Ack => Settle::Ack,
            Action::Nack(_) => Settle::Nack,
            Action::InProgress => Settle::InProgress,
            Action::DeadLetter(_) => Settle::DeadLetter,
        }
    }
}

/// Which delivery a settle is meant for.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SettleOptions {
    /// The `attempt` of the event being settled: when the message was delivered again since,
    /// the answer is 409 and the newer delivery is left alone.
    pub attempt: Option<u32>,
}

/// The delivery a settle names: the inbox and the message id.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct Delivered {
    /// The agent (or pool) whose inbox delivered the message.
    pub agent: String,
    /// The id of the delivered message.
    pub message_id: String,
}

/// Why a settle is refused; every settle route answers these.
#[derive(IntoResponses)]
#[allow(
    dead_code,
    reason = "it only describes the responses in the OpenAPI document"
)]
pub enum SettleRefusals {
    /// An unsafe id, a bad query or a malformed body.
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No or unknown bearer token.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// Another agent's inbox.
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// No such delivery is held.
    #[response(status = 404)]
    NotHeld(ErrorBody),
    /// The ack deadline passed, or `attempt` names an older delivery; the message was delivered
    /// again.
    #[response(status = 409)]
    Superseded(ErrorBody),
    /// Too many settles from this agent; see Retry-After.
    #[response(status = 429)]
    RateLimited(ErrorBody),
}

/// Acknowledges a held delivery of `agent`'s inbox: done, never delivered again.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent}/inbox/{message_id}/ack",
    tag = "inbox",
    params(Delivered, SettleOptions),
    responses(
        (status = 204, description = "Acknowledged"),
        SettleRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn ack(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(delivered): ApiPath<Delivered>,
    ApiQuery(options): ApiQuery<SettleOptions>,
) -> Result<StatusCode, ApiError> {
    settle_as(app, caller, delivered, Action::Ack, options).await
}

/// Gives a held delivery of `agent`'s inbox back: delivered again after `delay_ms`; on its last
/// attempt (`max_deliver`) it becomes a dead letter instead.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent}/inbox/{message_id}/nack",
    tag = "inbox",
    params(Delivered, SettleOptions),
    request_body(content = NackBody, content_type = "application/json", description = "Optional: an empty body is a nack without delay"),
    responses(
        (status = 204, description = "Given back, or a dead letter after its last attempt"),
        SettleRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn nack(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(delivered): ApiPath<Delivered>,
    ApiQuery(options): ApiQuery<SettleOptions>,
    body: Result<Bytes, BytesRejection>,
) -> Result<StatusCode, ApiError> {
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let delay = nack_delay(&bytes)?;
    settle_as(app, caller, delivered, Action::Nack(delay), options).await
}

/// Says a held delivery of `agent`'s inbox is still being worked on: its ack deadline starts
/// again (as JetStream's `+WPI` or an SQS visibility timeout).
#[utoipa::path(
    post,
    path = "/v1/agents/{agent}/inbox/{message_id}/in-progress",
    tag = "inbox",
    params(Delivered, SettleOptions),
    responses(
        (status = 204, description = "The ack deadline starts again"),
        SettleRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn in_progress(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(delivered): ApiPath<Delivered>,
    ApiQuery(options): ApiQuery<SettleOptions>,
) -> Result<StatusCode, ApiError> {
    settle_as(app, caller, delivered, Action::InProgress, options).await
}

/// Gives up on a held delivery of `agent`'s inbox: its handler failed and will not retry, so
/// the message becomes a dead letter now (reason `failed` with the attempts and the error),
/// without waiting for `max_deliver` redeliveries.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent}/inbox/{message_id}/dead-letter",
    tag = "inbox",
    params(Delivered, SettleOptions),
    request_body(content = DeadLetterSettle, content_type = "application/json", description = "Optional: the handler's error"),
    responses(
        (status = 204, description = "Dead-lettered"),
        SettleRefusals,
    ),
    security(("bearer" = []))
)]
pub async fn dead_letter(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(delivered): ApiPath<Delivered>,
    ApiQuery(options): ApiQuery<SettleOptions>,
    body: Result<Bytes, BytesRejection>,
) -> Result<StatusCode, ApiError> {
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let action = Action::DeadLetter(dead_letter_error(&bytes)?);
    settle_as(app, caller, delivered, action, options).await
}

/// Any other action word under a delivery (not in the OpenAPI document): `ack`, `nack` and
/// `in-progress` are answered by their own routes, anything else is a 400 naming them.
pub async fn settle(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath((agent, message_id, action)): ApiPath<(String, String, Settle)>,
    ApiQuery(options): ApiQuery<SettleOptions>,
    body: Result<Bytes, BytesRejection>,
) -> Result<StatusCode, ApiError> {
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let action = match action {
        Settle::Ack => Action::Ack,
        Settle::Nack => Action::Nack(nack_delay(&bytes)?),
        Settle::InProgress => Action::InProgress,
        Settle::DeadLetter => Action::DeadLetter(dead_letter_error(&bytes)?),
    };
    let delivered = Delivered { agent, message_id };
    settle_as(app, caller, delivered, action, options).await
}

/// Settles (or extends) the held delivery of `message_id` in `agent`'s inbox.
pub(crate) async fn settle_as(
    app: AppState,
    caller: Caller,
    delivered: Delivered,
    action: Action,
    options: SettleOptions,
) -> Result<StatusCode, ApiError> {
    let held = held(&app, &caller, &delivered, options)?;
    let Delivered { agent, message_id } = delivered;
    let d = &held.delivery;
    let word = action.word();
    match action {
        Action::InProgress => {
            app.bus.in_progress(d).await?;
            app.inboxes.renew(&agent, &message_id);
            tracing::debug!(%agent, %message_id, "in progress");
            return Ok(StatusCode::NO_CONTENT);
        }
        Action::Ack => {
            app.bus.ack(d).await?;
            acked(&app, &agent, held);
            return Ok(StatusCode::NO_CONTENT);
        }
        Action::Nack(delay) => {
            app.metrics.nacked.inc();
            if app.bus.nack_or_dead_letter(d, delay).await? {
                tracing::info!(%agent, %message_id, attempt = d.attempt, "dead-lettered: nacked on its last attempt");
                settled(&app, &agent, &held, Settle::DeadLetter);
                return Ok(StatusCode::NO_CONTENT);
            }
            let mut nacked = held.event(&agent, Step::Nacked);
            nacked.delay_ms = Some(u64::try_from(delay.as_millis()).unwrap_or(u64::MAX));
            app.history.record(message_id.as_str(), nacked);
            settled_quietly(&app, &agent, &held, word);
            return Ok(StatusCode::NO_CONTENT);
        }
        Action::DeadLetter(error) => {
            let reason = chorus_bus::DeadReason::Failed {
                attempts: d.attempt,
                error,
            };
            app.bus.dead_letter(d, reason).await?;
            tracing::info!(%agent, %message_id, attempt = d.attempt, "dead-lettered: its reader gave up");
        }
    }
    settled(&app, &agent, &held, word);
    Ok(StatusCode::NO_CONTENT)
}

/// A delivery held for an inbox stream, found for a settle.
pub(crate) struct Held {
    delivery: Delivery,
    /// How long it has been held.
    held_for: Duration,
    traceparent: Option<String>,
    /// The stream it was last sent on.
    stream: u64,
    /// Who settles it: an agent id, or `admin`.
    by: String,
}

impl Held {
    /// The held delivery.
    pub(crate) fn delivery(&self) -> &Delivery {
        &self.delivery
    }

    /// A history event of this delivery of `agent`'s inbox, by whoever settles it.
    fn event(&self, agent: &str, step: Step) -> Event {
        Event::new(agent, self.delivery.attempt, step, self.stream).by(&self.by)
    }
}

/// The delivery a settle by `caller` acts on, after the checks every settle makes: safe ids,
/// the caller may read the inbox and settle now (its rate), the delivery is held, and is the
/// attempt named by `options`.
pub(crate) fn held(
    app: &AppState,
    caller: &Caller,
    Delivered { agent, message_id }: &Delivered,
    options: SettleOptions,
) -> Result<Held, ApiError> {
    check_id("the agent id", agent)?;
    check_id("the message id", message_id)?;
    app.policy.may_read(caller, agent)?;
    if let Caller::Agent(me) = caller {
        app.settle_rate.check(me)?;
    }
    let HeldCopy {
        delivery,
        held_for,
        traceparent,
        stream,
        lease_until,
    } = app
        .inboxes
        .get(agent, message_id)
        .ok_or_else(|| not_held(agent, message_id))?;
    // On a store that cannot refuse a stale settle itself (NATS), one past the lease (less the
    // time the delivery took to reach this server) is refused here: the store may have sent
    // the message out again, and a 204 must mean it will not come again.
    let now = Instant::now();
    if !app.bus.refuses_stale_settles() && now + LEASE_MARGIN >= lease_until {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "lease_passed",
            format!(
                "the lease of attempt {} of {message_id:?} ended {} ms ago: the store may deliver it again; settle the delivery that comes next",
                delivery.attempt,
                (now + LEASE_MARGIN)
                    .saturating_duration_since(lease_until)
                    .as_millis()
            ),
        ));
    }
    if let Some(attempt) = options.attempt
        && attempt != delivery.attempt
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "superseded",
            format!(
                "attempt {attempt} of {message_id:?} is no longer held: attempt {} was delivered since; settle that one",
                delivery.attempt
            ),
        ));
    }
    Ok(Held {
        delivery,
        held_for,
        traceparent,
        stream,
        by: caller.name().to_owned(),
    })
}

/// What is taken off a lease before a settle is refused as past it, on a store that cannot
/// refuse stale settles: the time a delivery may take from the store's lease start to this
/// server.
const LEASE_MARGIN: Duration = Duration::from_millis(100);

/// 404: no delivery of `message_id` is held for `agent`.
pub(crate) fn not_held(agent: &str, message_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_held",
        format!(
            "no delivery of {message_id:?} is held for {agent:?}: it was never delivered over the inbox stream, or it was already settled"
        ),
    )
}

/// Records that the store acknowledged `held`, a delivery of `agent`'s inbox.
pub(crate) fn acked(app: &AppState, agent: &str, held: Held) {
    app.metrics.acked.inc();
    app.metrics.ack_seconds.observe(held.held_for.as_secs_f64());
    settled(app, agent, &held, Settle::Ack);
}

/// Lets go of `held` once the store settled it by `word` (an ack or a dead letter), noting it
/// in the delivery history: its stream may send another.
fn settled(app: &AppState, agent: &str, held: &Held, word: Settle) {
    let step = match word {
        Settle::Ack => Some(Step::Acked),
        Settle::DeadLetter => Some(Step::DeadLettered),
        Settle::Nack | Settle::InProgress => None,
    };
    if let Some(step) = step {
        let message_id = held.delivery.envelope.id.as_str();
        app.history.record(message_id, held.event(agent, step));
    }
    settled_quietly(app, agent, held, word);
}

/// [`settled`] without the history event (the caller wrote its own).
fn settled_quietly(app: &AppState, agent: &str, held: &Held, word: Settle) {
    let d = &held.delivery;
    app.inboxes.settle(agent, d);
    let span = telemetry::span_for("settle", word.name(), agent, d, held.traceparent.as_deref());
    let message_id = &d.envelope.id;
    tracing::debug!(parent: &span, %agent, %message_id, action = ?word, "settled");
}

/// The error of a dead-letter body: empty, or `{"error": "..."}`.
fn dead_letter_error(bytes: &[u8]) -> Result<String, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(String::new());
    }
    let body: DeadLetterSettle = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(
            "malformed_json",
            format!("the body must be {{\"error\": <text>}} or empty: {e}"),
        )
    })?;
    Ok(body.error)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_field_asks_for_half_the_hand_back_wait() {
        assert_eq!(retry_field(Duration::from_secs(1)), "retry: 500\n");
        assert_eq!(retry_field(Duration::from_millis(4001)), "retry: 2000\n");
    }
}
