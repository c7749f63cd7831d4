//! The inbox stream's Server-Sent Events, written out once into a buffer of their size.
//!
//! axum's `Event` grows its buffer field by field and takes the data through its line checks
//! in pieces: with the message's JSON copied before and after, four buffers the size of the
//! message for every delivery. Here the events sent together are one buffer (one chunk of the
//! response); the stream keeps axum's framing (`id`, `event`, `data`, a blank line) and its
//! keep-alive comment.

use std::convert::Infallible;
use std::io::Write;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Serialize;
use tokio::time::{Instant, Sleep};

/// A stream silent this long sends a keep-alive comment (axum's interval).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The comment sent after a silence of [`KEEP_ALIVE`].
const PING: &[u8] = b":\n\n";

/// Appends to `frame` one event named `event` with the id `id` and `data` as JSON; an `error`
/// event instead when `data` cannot be written.
///
/// The JSON is one line: serde_json escapes line breaks within strings, and the raw values it
/// passes through are one line ([`super::document`]).
pub(super) fn push_json(frame: &mut Vec<u8>, id: &str, event: &str, data: &impl Serialize) {
    let start = frame.len();
    let _ = write!(frame, "id: {id}\nevent: {event}\ndata: ");
    match serde_json::to_writer(&mut *frame, data) {
        Ok(()) => frame.extend_from_slice(b"\n\n"),
        Err(_) => {
            frame.truncate(start);
            frame.extend_from_slice(&text("error", "unencodable message"));
        }
    }
}

/// One event named `event` with `data`; a line break in `data` starts another `data:` line,
/// and carriage returns become spaces.
pub(super) fn text(event: &str, data: &str) -> Bytes {
    let mut frame = format!("event: {event}\n");
    for line in data.split('\n') {
        frame.push_str("data: ");
        frame.push_str(&line.replace('\r', " "));
        frame.push('\n');
    }
    frame.push('\n');
    frame.into()
}

/// A comment line (`: text`), which readers skip; line breaks and carriage returns become
/// spaces.
pub(super) fn comment(text: &str) -> Bytes {
    format!(": {}\n\n", text.replace(['\n', '\r'], " ")).into()
}

/// The response of an event stream: `text/event-stream` with `events`, and a keep-alive
/// comment after 15 s without one.
pub(super) fn response(events: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let body = KeepAlive::new(events, KEEP_ALIVE);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// The events of a stream, with a keep-alive comment whenever they pause for `every` (as
/// axum's keep-alive; the timer is moved only when it fires, not for each event).
struct KeepAlive {
    events: Pin<Box<dyn Stream<Item = Bytes> + Send>>,
    every: Duration,
    timer: Pin<Box<Sleep>>,
    /// When the last event or comment was sent.
    last: Instant,
}

impl KeepAlive {
    fn new(events: impl Stream<Item = Bytes> + Send + 'static, every: Duration) -> KeepAlive {
        KeepAlive {
            events: Box::pin(events),
            every,
            timer: Box::pin(tokio::time::sleep(every)),
            last: Instant::now(),
        }
    }
}

impl Stream for KeepAlive {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = this.events.as_mut().poll_next(cx) {
            this.last = Instant::now();
            return Poll::Ready(frame.map(Ok));
        }
        while this.timer.as_mut().poll(cx).is_ready() {
            let due = this.last + this.every;
            if due > Instant::now() {
                // Something was sent since the timer was set: wait for the rest of the silence.
                this.timer.as_mut().reset(due);
            } else {
                this.last = Instant::now();
                this.timer.as_mut().reset(this.last + this.every);
                return Poll::Ready(Some(Ok(Bytes::from_static(PING))));
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::{StreamExt, stream};
    use serde_json::{Value, json};

    #[test]
    fn an_event_is_appended_whole_with_its_data_on_one_line() {
        let data = json!({"message_id": "m-1", "text": "two\nlines\r\nand ünïcode"});
        let mut frame = b"id: run-6\nevent: message\ndata: {}\n\n".to_vec();
        push_json(&mut frame, "run-7", "message", &data);
        let text = std::str::from_utf8(&frame).unwrap();
        let lines: Vec<&str> = text.split('\n').collect();
        assert_eq!(lines[..4], ["id: run-6", "event: message", "data: {}", ""]);
        assert_eq!(lines[4..6], ["id: run-7", "event: message"]);
        let read: Value = serde_json::from_str(lines[6].strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(read, data);
        assert_eq!(lines[7..], ["", ""], "{text:?}");
        assert!(!text.contains('\r'));
    }

    #[test]
    fn a_text_event_puts_each_line_in_its_own_data_field() {
        let frame = text("error", "the store failed:\r\nlocked\nretry");
        assert_eq!(
            &frame[..],
            b"event: error\ndata: the store failed: \ndata: locked\ndata: retry\n\n"
        );
    }

    #[tokio::test]
    async fn a_comment_follows_every_silence_of_the_interval_and_only_those() {
        let every = Duration::from_millis(60);
        let started = Instant::now();
        let mut silent = KeepAlive::new(stream::pending(), every);
        assert_eq!(silent.next().await.unwrap().unwrap(), PING);
        assert!(started.elapsed() >= every);

        // An event late in the first interval: the comment comes a whole interval after it,
        // not when the first interval ends.
        let started = Instant::now();
        let once = stream::once(async move {
            tokio::time::sleep(every / 2).await;
            Bytes::from_static(b"event: message\n\n")
        });
        let mut spoken = KeepAlive::new(once.chain(stream::pending()), every);
        assert_eq!(
            spoken.next().await.unwrap().unwrap(),
            &b"event: message\n\n"[..]
        );
        let sent = Instant::now();
        assert_eq!(spoken.next().await.unwrap().unwrap(), PING);
        assert!(sent.elapsed() >= every, "{:?}", sent.elapsed());
        assert!(
            started.elapsed() >= every * 3 / 2,
            "{:?}",
            started.elapsed()
        );
    }
}
