//! A live stream of changes for the admin (the web UI re-renders on it): every request that
//! changed something — a publish, an ack, a nack, a replay, a confirmation request or decision —
//! is announced once it has been answered, and each open stream looks every second for new
//! dead letters (a refused publish, an expired message, one past its last attempt).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::extract::State;
use axum::http::{Method, Request, Uri};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{StreamExt, stream};
use pin_project_lite::pin_project;
use serde::Serialize;
use tokio::sync::broadcast;
use tower::{Layer, Service};
use utoipa::ToSchema;

use crate::api::extract::Admin;
use crate::error::{ApiError, ErrorBody};
use crate::live::{Change, Live};
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

/// What a writing request answered with `status` changed, if anything.
fn kind_of(path: &str, status: u16) -> Option<&'static str> {
    let ok = (200..300).contains(&status);
    if !ok {
        return None;
    }
    if path == "/v1/messages" {
        return (status == 201).then_some("published");
    }
    if path == "/v1/messages/batch" {
        return Some("published");
    }
    Some(if path.starts_with("/v1/confirmations") {
        "confirmation"
    } else if path.ends_with("/ack") {
        "acked"
    } else if path.ends_with("/nack") {
        "nacked"
    } else if path.ends_with("/replay") {
        "replayed"
    } else {
        "changed"
    })
}

/// The layer that announces every writing request that changed something, once it is
/// answered (around every route). A plain tower layer: axum's `from_fn` boxes each request's
/// future and clones the routes behind it, for every request; this copies nothing but the
/// writing requests' URIs (shared buffers), and reads them only while an admin stream is open.
#[derive(Clone)]
pub struct Observe {
    live: Live,
}

impl Observe {
    /// Announces to `live`.
    pub fn new(live: Live) -> Observe {
        Observe { live }
    }
}

impl<S> Layer<S> for Observe {
    type Service = Observed<S>;

    fn layer(&self, inner: S) -> Observed<S> {
        Observed {
            inner,
            live: self.live.clone(),
        }
    }
}

/// A service whose writing requests are announced (see [`Observe`]).
#[derive(Clone)]
pub struct Observed<S> {
    inner: S,
    live: Live,
}

impl<S, B> Service<Request<B>> for Observed<S>
where
    S: Service<Request<B>, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Announcing<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let writes = req.method() != Method::GET && req.method() != Method::HEAD;
        // Whether a stream is open is asked when the answer is ready (one opened meanwhile
        // hears of it); the URI is shared, not copied.
        let to = writes.then(|| (self.live.clone(), req.uri().clone()));
        Announcing {
            answer: self.inner.call(req),
            to,
        }
    }
}

pin_project! {
    /// A request's answer, announced when it has changed something.
    pub struct Announcing<F> {
        #[pin]
        answer: F,
        to: Option<(Live, Uri)>,
    }
}

impl<F, E> Future for Announcing<F>
where
    F: Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = ready!(this.answer.poll(cx));
        if let (Ok(response), Some((live, uri))) = (&answer, this.to.take())
            && live.watched()
            && let Some(kind) = kind_of(uri.path(), response.status().as_u16())
        {
            live.announce(Change {
                kind: kind.to_owned(),
                path: uri.path().to_owned(),
            });
        }
        Poll::Ready(answer)
    }
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

#[cfg(test)]
mod tests {
    use super::kind_of;

    #[test]
    fn names_the_change_a_request_made() {
        assert_eq!(kind_of("/v1/messages", 201), Some("published"));
        assert_eq!(
            kind_of("/v1/messages", 200),
            None,
            "a duplicate changes nothing"
        );
        assert_eq!(
            kind_of("/v1/messages", 422),
            None,
            "the dead letter watch tells"
        );
        assert_eq!(kind_of("/v1/messages/batch", 200), Some("published"));
        assert_eq!(kind_of("/v1/agents/bob/inbox/m1/ack", 204), Some("acked"));
        assert_eq!(kind_of("/v1/agents/bob/inbox/ack", 200), Some("acked"));
        assert_eq!(kind_of("/v1/agents/bob/inbox/m1/nack", 204), Some("nacked"));
        assert_eq!(kind_of("/v1/agents/bob/inbox/m1/ack", 403), None);
        assert_eq!(kind_of("/v1/dead-letters/d1/replay", 200), Some("replayed"));
        assert_eq!(
            kind_of("/v1/confirmations/c1/approve", 200),
            Some("confirmation")
        );
    }
}
