//! A task as a Server-Sent Events stream (`SendStreamingMessage`, `SubscribeToTask`): the task,
//! then a `statusUpdate` at every change, framed for the binding.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{StreamExt, stream};
use serde_json::{Value, json};

use super::operations::{POLL, SLOWEST_POLL, load, refusal};
use super::rpc::{self, RpcError};
use crate::auth::Caller;
use crate::state::AppState;
use crate::streams::StreamTicket;

/// Counts a task stream of `caller` against its `max_streams_per_agent`, as an inbox stream is
/// (the admin's are not counted); refused (429 `too_many_streams`) past the cap. Taken before
/// anything is published, so that a refused stream sends nothing.
pub(super) fn open_stream(
    app: &AppState,
    caller: &Caller,
) -> Result<Option<StreamTicket>, RpcError> {
    match caller {
        Caller::Agent(me) => app.streams.open(me).map(Some).map_err(refusal),
        Caller::Admin => Ok(None),
    }
}

/// How the events of a stream are framed.
#[derive(Debug, Clone)]
pub(super) enum Framing {
    /// Each event a JSON-RPC answer to the request with this id.
    JsonRpc(Value),
    /// Each event the bare `StreamResponse`; an error as an `error` event (HTTP+JSON).
    Rest,
}

impl Framing {
    fn event(&self, outcome: Result<Value, &RpcError>) -> Event {
        let (data, error) = match (self, outcome) {
            (Framing::JsonRpc(id), Ok(payload)) => (rpc::result(id, payload), false),
            (Framing::JsonRpc(id), Err(e)) => (rpc::error(id, e), false),
            (Framing::Rest, Ok(payload)) => (payload, false),
            (Framing::Rest, Err(e)) => (json!({"error": e.to_status()}), true),
        };
        let event = Event::default().json_data(&data).unwrap_or_default();
        if error { event.event("error") } else { event }
    }
}

/// The longest a task stream stays open: a task whose agent never answers would otherwise hold
/// its connection (and a poll of the store every [`POLL`]) for ever; the client subscribes
/// again (`SubscribeToTask`) to go on.
const MAX_STREAM: Duration = Duration::from_secs(30 * 60);

/// The task as an SSE stream: the `task` first, then a `statusUpdate` on every change, until it
/// ends or needs input (or the server stops, or [`MAX_STREAM`] has passed).
pub(super) fn stream_task(
    app: AppState,
    caller: Caller,
    task_id: String,
    framing: Framing,
    ticket: Option<StreamTicket>,
) -> impl IntoResponse {
    let stopped = app.stopped();
    let events = stream::unfold(
        (app, caller, task_id, framing, None::<Value>, false),
        |(app, caller, task_id, framing, last, done)| async move {
            if done {
                return None;
            }
            let mut pause = POLL;
            loop {
                if last.is_some() {
                    tokio::time::sleep(pause).await;
                    // A task that does not change is read less and less often (every
                    // SLOWEST_POLL at most); after a change, every POLL again.
                    pause = (pause * 2).min(SLOWEST_POLL);
                }
                let (event, view_state) = match load(&app, &caller, &task_id).await {
                    Ok(view) => {
                        let status = view.status();
                        if last.as_ref() == Some(&status) {
                            continue;
                        }
                        let payload = match last {
                            None => json!({"task": view.to_json(None)}),
                            Some(_) => view.status_update(),
                        };
                        (framing.event(Ok(payload)), Some((status, view.state)))
                    }
                    Err(e) => (framing.event(Err(&e)), None),
                };
                let next = match view_state {
                    Some((status, state)) => (
                        app,
                        caller,
                        task_id,
                        framing,
                        Some(status),
                        state.ends_stream(),
                    ),
                    None => (app, caller, task_id, framing, None, true),
                };
                return Some((Ok::<_, Infallible>(event), next));
            }
        },
    )
    .take_until(stopped)
    .take_until(tokio::time::sleep(MAX_STREAM))
    // The ticket goes with the stream: counted until the connection closes.
    .map(move |event| {
        let _counted = &ticket;
        event
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
