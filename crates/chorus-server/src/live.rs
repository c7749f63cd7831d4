//! Where the changes the admin's event stream shows are announced (`/v1/events`), and the layer
//! that announces what each writing request changed: below the state, which holds it, the
//! routes, which read it, and the layers around them.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::{Method, Request, Uri};
use axum::response::Response;
use pin_project_lite::pin_project;
use serde::Serialize;
use tokio::sync::broadcast;
use tower::{Layer, Service};
use utoipa::ToSchema;

/// Changes kept for a slow reader before it is told to re-read everything.
const BUFFER: usize = 256;

/// The data of one `change` event.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Change {
    /// published, acked, nacked, replayed, confirmation, changed, or dead_lettered (the number
    /// of dead letters moved); `ready` (the stream is open) and `resync` (changes were missed:
    /// re-read everything) with the stream's own path.
    pub kind: String,
    /// The request path that made the change.
    pub path: String,
}

/// Where changes are announced; shared by the middleware and the streams.
#[derive(Debug, Clone)]
pub struct Live {
    tx: broadcast::Sender<Change>,
}

impl Default for Live {
    fn default() -> Live {
        Live {
            tx: broadcast::channel(BUFFER).0,
        }
    }
}

impl Live {
    /// Announces a change to every open stream (none open: nothing happens).
    pub fn announce(&self, change: Change) {
        let _ = self.tx.send(change);
    }

    /// True when a stream is open to hear announcements.
    pub fn watched(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    /// A receiver of the changes announced from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }
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
