//! The request body's edge, the same for every route whatever its protocol (`/v1`, A2A, MCP,
//! the UI's): a body whose declared `Content-Length` is over the limit is refused with 413
//! before a byte of it is read (so `Expect: 100-continue` gets no `100 Continue`), and a body
//! must have arrived whole within a deadline (nine tenths of the request timeout), counted from
//! the request's start, or its read fails ([`BodyTimedOut`], answered 408).
//!
//! tower-http's `RequestBodyTimeoutLayer` bounds the wait for each frame, not the whole body: a
//! client trickling a byte before each timeout keeps its connection for ever. The deadline
//! here is on the whole body, hence a small body type of our own.

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::http::{Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use hyper::body::{Frame, SizeHint};
use tokio::time::Sleep;
use tower::{Layer, Service};

use crate::error::ApiError;

/// Why a request body's read failed: it had not arrived whole within the request timeout.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimedOut(pub Duration);

impl std::fmt::Display for BodyTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the request body did not arrive whole within {} s (nine tenths of the server's request timeout)",
            self.0.as_secs_f64()
        )
    }
}

impl Error for BodyTimedOut {}

/// True when `e`, or an error it was caused by, is a [`BodyTimedOut`].
pub(crate) fn timed_out(e: &(dyn Error + 'static)) -> Option<BodyTimedOut> {
    let mut cause = Some(e);
    while let Some(e) = cause {
        if let Some(t) = e.downcast_ref::<BodyTimedOut>() {
            return Some(*t);
        }
        cause = e.source();
    }
    None
}

/// The 408 of a body that did not arrive in time.
pub(crate) fn late(t: BodyTimedOut) -> ApiError {
    ApiError::new(StatusCode::REQUEST_TIMEOUT, "body_timeout", t.to_string())
}

/// The layer of [`BodyEdge`]: bodies up to `limit` bytes, read within `deadline` (none: no
/// deadline).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BodyEdgeLayer {
    pub limit: usize,
    pub deadline: Option<Duration>,
}

impl<S> Layer<S> for BodyEdgeLayer {
    type Service = BodyEdge<S>;

    fn layer(&self, inner: S) -> BodyEdge<S> {
        BodyEdge {
            inner,
            limit: self.limit,
            deadline: self.deadline,
        }
    }
}

/// Refuses a declared body over the limit, and puts the deadline on the others.
#[derive(Debug, Clone)]
pub(crate) struct BodyEdge<S> {
    inner: S,
    limit: usize,
    deadline: Option<Duration>,
}

/// The answer of the edge: the inner service's, or the edge's own 413.
type EdgeFuture<F, E> = futures::future::Either<F, std::future::Ready<Result<Response<Body>, E>>>;

impl<S, B> Service<Request<B>> for BodyEdge<S>
where
    S: Service<Request<Deadline<B>>, Response = Response<Body>>,
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = EdgeFuture<S::Future, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(length) = declared
            && length > self.limit as u64
        {
            let refused = too_large(length, self.limit).into_response();
            return futures::future::Either::Right(std::future::ready(Ok(refused)));
        }
        let deadline = self.deadline;
        let request = request.map(|inner| Deadline {
            inner,
            timer: deadline.map(|d| (Box::pin(tokio::time::sleep(d)), d)),
            done: false,
        });
        futures::future::Either::Left(self.inner.call(request))
    }
}

/// The 413 of a body declared `length` bytes long, over `limit`.
pub(crate) fn too_large(length: u64, limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!(
            "the request body is declared {length} bytes long, over the limit of {limit} bytes (max_body_bytes)"
        ),
    )
}

/// The 413 of a body that was read past `limit` bytes.
pub(crate) fn too_large_read(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the request body is larger than the limit of {limit} bytes"),
    )
}

/// A request body that fails with [`BodyTimedOut`] once its deadline has passed before its end.
pub struct Deadline<B> {
    inner: B,
    /// The timer running since the request came, and the timeout it counts.
    timer: Option<(Pin<Box<Sleep>>, Duration)>,
    /// The body has ended (or failed): the timer no longer matters.
    done: bool,
}

impl<B> HttpBody for Deadline<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<Box<dyn Error + Send + Sync>>,
{
    type Data = Bytes;
    type Error = Box<dyn Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        if !this.done
            && let Some((timer, limit)) = &mut this.timer
            && timer.as_mut().poll(cx).is_ready()
        {
            this.done = true;
            return Poll::Ready(Some(Err(Box::new(BodyTimedOut(*limit)))));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                Poll::Ready(Some(Err(e.into())))
            }
            other => other.map(|frame| frame.map(|f| f.map_err(Into::into))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use http_body_util::{BodyExt, StreamBody};
    use std::convert::Infallible;

    fn deadline_on<B>(inner: B, secs: u64) -> Deadline<B> {
        let limit = Duration::from_secs(secs);
        Deadline {
            inner,
            timer: Some((Box::pin(tokio::time::sleep(limit)), limit)),
            done: false,
        }
    }

    fn part(bytes: &'static [u8]) -> Result<Frame<Bytes>, Infallible> {
        Ok(Frame::data(Bytes::from_static(bytes)))
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_has_not_ended_by_its_deadline_fails_and_a_whole_one_is_read() {
        let never_ends = futures::stream::iter([part(b"part")]).chain(futures::stream::pending());
        let e = deadline_on(StreamBody::new(never_ends), 2)
            .collect()
            .await
            .expect_err("timed out");
        let late = timed_out(e.as_ref()).expect("a BodyTimedOut");
        assert_eq!(late.0, Duration::from_secs(2));

        let whole = futures::stream::iter([part(b"al"), part(b"l")]);
        let read = deadline_on(StreamBody::new(whole), 2)
            .collect()
            .await
            .unwrap()
            .to_bytes();
        assert_eq!(&read[..], b"all");
    }
}
