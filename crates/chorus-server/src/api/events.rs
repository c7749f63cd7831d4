//! A live stream of changes for the admin (the web UI re-renders on it): every request that
//! changed something — a publish, an ack, a nack, a replay, a confirmation request or decision —
//! is announced once it has been answered, and each open stream looks every second for new
//! dead letters (a refused publish, an expired message, one past its last attempt).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{StreamExt, stream};
use serde::Serialize;
use tokio::sync::broadcast;
use utoipa::ToSchema;

use crate::api::extract::Admin;
use crate::error::{ApiError, ErrorBody};
use crate::live::Change;
use crate::state::AppState;

/// How often an open stream looks for new dead letters.
const DEAD_LETTER_CHECK: Duration = Duration::from_secs(1);

/// One event of the `/v1/events` stream as a client reads it (the OpenAPI 3.2 reading of a
/// `text/event-stream` schema: the fields of each event).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChangeEvent {
    /// `ready` (first), `change`, or `resync`.
    #[schema(pattern = "^(ready|change|resync)$")]
    pub event: String,
    /// A [`Change`] as JSON.
    #[schema(content_media_type = "application/json")]
    pub data: String,
}

/// Announces `dead_lettered` whenever the number of dead letters moved from `seen` (the
/// number when the stream opened) or from the last look.
fn dead_letter_watch(app: AppState, seen: u64) -> impl futures::Stream<Item = Change> + Send {
    let mut ticks = tokio::time::interval(DEAD_LETTER_CHECK);
    ticks.reset();
    stream::unfold(
        (app, ticks, seen),
        |(app, mut ticks, mut seen)| async move {
            loop {
                ticks.tick().await;
                let Ok(now) = app.bus.dead_letter_count().await else {
                    continue;
                };
                if std::mem::replace(&mut seen, now) != now {
                    let change = Change {
                        kind: "dead_lettered".into(),
                        path: "/v1/dead-letters".into(),
                    };
                    return Some((change, (app, ticks, seen)));
                }
            }
        },
    )
}

/// Changes as Server-Sent Events (`event: change`), for the admin; `event: resync` when some
/// were missed. Ends when the server stops.
#[utoipa::path(
    get,
    path = "/v1/events",
    tag = "admin",
    responses(
        (status = 200, description = "A text/event-stream of `change` events", body = ChangeEvent, content_type = "text/event-stream"),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn events(
    State(app): State<AppState>,
    _admin: Admin,
) -> Result<impl IntoResponse, ApiError> {
    let rx = app.live.subscribe();
    let changes = stream::unfold(rx, |mut rx| async move {
        let event = match rx.recv().await {
            Ok(change) => Event::default()
                .event("change")
                .json_data(&change)
                .unwrap_or_default(),
            Err(broadcast::error::RecvError::Lagged(_)) => own_event("resync"),
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok::<_, Infallible>(event), rx))
    });
    let seen = app.bus.dead_letter_count().await?;
    let watched = dead_letter_watch(app.clone(), seen).map(|change| {
        Ok(Event::default()
            .event("change")
            .json_data(&change)
            .unwrap_or_default())
    });
    let hello = stream::once(async { Ok(own_event("ready")) });
    let body = hello
        .chain(stream::select(changes, watched))
        .take_until(app.stopped());
    Ok(Sse::new(body).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// An event of the stream itself (`ready`, `resync`): its data is a [`Change`] too, so that
/// every event matches the document.
fn own_event(kind: &str) -> Event {
    let change = Change {
        kind: kind.into(),
        path: "/v1/events".into(),
    };
    Event::default()
        .event(kind)
        .json_data(&change)
        .unwrap_or_default()
}
