//! The one Server-Sent Events reader of chorus, on `eventsource-stream` (the WHATWG parsing
//! rules: `event:`, `id:`, `retry:`, multi-line `data:`, comments, CR/LF/CRLF line ends, a
//! byte-order mark), byte-safe across chunk boundaries (a character split between two network
//! chunks is joined, never replaced by U+FFFD), in time linear in a chunk of many events
//! (whatever their line ends; one event of many lines still costs the parser time quadratic in
//! its lines), with an optional silence limit.
//!
//! It lives in chorus-agent because its production readers are here (the model clients and the
//! inbox client of `chorus run --server`) and chorus-server, whose tests and benches read inbox
//! streams with it, already depends on chorus-agent; chorus-core has no HTTP and no async.

use std::fmt::Display;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{EventStreamError, Eventsource};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};

pub use eventsource_stream::Event;

/// Why an event stream stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// The connection broke or the body could not be read.
    #[error("the stream broke: {0}")]
    Transport(String),
    /// No byte arrived for the silence limit.
    #[error("no byte arrived for {} ms", .0.as_millis())]
    Idle(Duration),
    /// The stream is not UTF-8 (or ended inside a character).
    #[error("the stream is not UTF-8: {0}")]
    Utf8(String),
    /// A line the event-stream grammar cannot read.
    #[error("unreadable event stream: {0}")]
    Parse(String),
}

/// Reads the events of a `text/event-stream` body.
pub struct SseReader {
    events: BoxStream<'static, Result<Event, SseError>>,
}

impl SseReader {
    /// Reads the events of a stream of byte chunks, cut anywhere.
    pub fn new<S, B, E>(bytes: S) -> Self
    where
        S: Stream<Item = Result<B, E>> + Send + 'static,
        B: AsRef<[u8]> + Send + 'static,
        E: Display + Send + 'static,
    {
        Self::limited(bytes, None)
    }

    /// As [`SseReader::new`], ending with [`SseError::Idle`] when `idle` passes without a byte
    /// (`None`: wait as long as the connection lasts). Only silence counts, not total length.
    pub fn limited<S, B, E>(bytes: S, idle: Option<Duration>) -> Self
    where
        S: Stream<Item = Result<B, E>> + Send + 'static,
        B: AsRef<[u8]> + Send + 'static,
        E: Display + Send + 'static,
    {
        let bytes = bytes.map(|chunk| chunk.map_err(|e| SseError::Transport(e.to_string())));
        let bytes = match idle {
            Some(idle) => until_silent(bytes, idle).boxed(),
            None => bytes.boxed(),
        };
        let events = at_event_ends(without_bom(bytes))
            .eventsource()
            .map(|event| {
                event.map_err(|e| match e {
                    EventStreamError::Transport(e) => e,
                    EventStreamError::Utf8(e) => SseError::Utf8(e.to_string()),
                    EventStreamError::Parser(e) => SseError::Parse(e.to_string()),
                })
            })
            .boxed();
        SseReader { events }
    }

    /// Reads the body of `response`, with the silence limit `idle`.
    pub fn response(response: reqwest::Response, idle: Option<Duration>) -> Self {
        Self::limited(response.bytes_stream(), idle)
    }

    /// The next event; `None` when the stream ended. Events without data are not dispatched
    /// (as the WHATWG rules say); a comment line (`: keep-alive`) is no event.
    pub async fn next(&mut self) -> Option<Result<Event, SseError>> {
        self.events.next().await
    }
}

/// The UTF-8 byte-order mark a stream may start with.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading byte-order mark (even one cut across chunks), after a blank line.
///
/// `eventsource-stream` 0.2.3 slices one byte off a leading mark, which panics on its three;
/// it never sees one here. The blank line dispatches nothing and keeps any further mark (part
/// of the first line's field name, as the rules say) away from that slicing.
fn without_bom<S, B>(bytes: S) -> impl Stream<Item = Result<Bytes, SseError>> + Send
where
    S: Stream<Item = Result<B, SseError>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    let mut head = Some(Vec::new());
    let body = bytes.map(move |chunk| {
        chunk.map(|chunk| {
            let chunk = chunk.as_ref();
            let Some(mut start) = head.take() else {
                return Bytes::copy_from_slice(chunk);
            };
            start.extend_from_slice(chunk);
            if start.len() < BOM.len() && BOM.starts_with(&start) {
                head = Some(start);
                return Bytes::new();
            }
            if start.starts_with(BOM) {
                start.drain(..BOM.len());
            }
            Bytes::from(start)
        })
    });
    futures::stream::once(async { Ok(Bytes::from_static(b"\n")) }).chain(body)
}

/// The chunks of `bytes` cut (without copying) after each blank line, so that the parser is
/// handed one event at a time.
///
/// `eventsource-stream` 0.2.3 copies what is left of its buffer after every line it reads: a
/// chunk of k lines cost it k copies of the chunk, so a chunk of many events (a server that
/// writes what it has at once, an HTTP/2 frame of model tokens) was read in time quadratic in
/// its size (`cargo bench -p chorus-agent --bench sse`).
fn at_event_ends<S>(bytes: S) -> impl Stream<Item = Result<Bytes, SseError>> + Send
where
    S: Stream<Item = Result<Bytes, SseError>> + Send + 'static,
{
    bytes.flat_map(|chunk| {
        let pieces: Vec<Result<Bytes, SseError>> = match chunk {
            Err(e) => vec![Err(e)],
            Ok(chunk) => {
                let mut pieces = Vec::new();
                let mut start = 0;
                for end in blank_line_ends(&chunk) {
                    pieces.push(Ok(chunk.slice(start..end)));
                    start = end;
                }
                if start < chunk.len() {
                    pieces.push(Ok(chunk.slice(start..)));
                }
                pieces
            }
        };
        futures::stream::iter(pieces)
    })
}

/// The offsets just after each blank line of `chunk` that the chunk itself shows to be one,
/// whatever its line ends (LF, CRLF or CR). A line end that may continue in the next chunk (a
/// CR last) and the first line end (whose line began in an earlier chunk) end no cut.
fn blank_line_ends(chunk: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    // Where the current line began, once a line end of this chunk has shown it.
    let mut line_start = None;
    let mut found = memchr::memchr2_iter(b'\r', b'\n', chunk);
    while let Some(at) = found.next() {
        let end = match chunk[at] {
            b'\r' => match chunk.get(at + 1) {
                None => break,
                Some(b'\n') => {
                    found.next();
                    at + 2
                }
                Some(_) => at + 1,
            },
            _ => at + 1,
        };
        if line_start == Some(at) {
            ends.push(end);
        }
        line_start = Some(end);
    }
    ends
}

/// The chunks of `bytes`, ending with [`SseError::Idle`] after `idle` without one.
fn until_silent<S, B>(bytes: S, idle: Duration) -> impl Stream<Item = Result<B, SseError>> + Send
where
    S: Stream<Item = Result<B, SseError>> + Send + 'static,
    B: Send + 'static,
{
    futures::stream::unfold(Some(bytes.boxed()), move |state| async move {
        let mut bytes = state?;
        match tokio::time::timeout(idle, bytes.next()).await {
            Ok(Some(chunk)) => Some((chunk, Some(bytes))),
            Ok(None) => None,
            Err(_) => Some((Err(SseError::Idle(idle)), None)),
        }
    })
}

/// The fake model server of the integration tests, for its chunk splitter.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../tests/support/fake_openai.rs"]
mod fake_openai;

#[cfg(test)]
mod tests {
    use super::fake_openai::split_inside_chars;
    use super::*;

    async fn read_all(chunks: Vec<Vec<u8>>) -> Vec<Event> {
        let mut reader = SseReader::new(futures::stream::iter(
            chunks.into_iter().map(Ok::<_, std::io::Error>),
        ));
        let mut events = Vec::new();
        while let Some(event) = reader.next().await {
            events.push(event.expect("an event"));
        }
        events
    }

    const STREAM: &str = "\u{feff}: a comment\r\nretry: 1500\nid: 7\nevent: message\n\
        data: Grüße, 世界 🎉\ndata: ещё строка\n\n\
        data: é\r\n\r\nevent: error\ndata:no space — ünd\n\n";

    fn check(events: &[Event]) {
        assert_eq!(events.len(), 3, "{events:?}");
        assert_eq!(events[0].event, "message");
        assert_eq!(events[0].id, "7");
        assert_eq!(events[0].retry, Some(Duration::from_millis(1500)));
        assert_eq!(events[0].data, "Grüße, 世界 🎉\nещё строка");
        assert_eq!(events[1].event, "message", "the default type");
        assert_eq!(events[1].data, "é");
        assert_eq!(events[1].id, "7", "the last event id carries over");
        assert_eq!(events[2].event, "error");
        assert_eq!(events[2].data, "no space — ünd");
    }

    #[tokio::test]
    async fn every_multi_byte_character_split_across_chunks_reads_whole() {
        let chunks = split_inside_chars(STREAM);
        let wide = STREAM.chars().filter(|c| c.len_utf8() > 1).count();
        assert_eq!(chunks.len(), wide + 1);
        assert!(
            chunks.iter().all(|c| std::str::from_utf8(c).is_err()),
            "no chunk is whole UTF-8 on its own"
        );
        check(&read_all(chunks).await);
    }

    #[tokio::test]
    async fn one_byte_chunks_and_one_chunk_read_the_same() {
        let bytes = STREAM.as_bytes();
        check(&read_all(bytes.iter().map(|b| vec![*b]).collect()).await);
        check(&read_all(vec![bytes.to_vec()]).await);
    }

    /// One event of a generated stream: a comment, a name, an id, a retry, data lines (none:
    /// an event that dispatches nothing) and blank lines after its own.
    type Generated = (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<u16>,
        Vec<String>,
        usize,
    );

    /// An event stream of `events`, each line ended by the next of `ends` (LF, CRLF or CR, in
    /// turn).
    fn stream_text(events: &[Generated], ends: &[usize]) -> String {
        let mut lines = Vec::new();
        for (comment, name, id, retry, data, blank) in events {
            lines.extend(comment.iter().map(|c| format!(":{c}")));
            lines.extend(name.iter().map(|n| format!("event: {n}")));
            lines.extend(id.iter().map(|i| format!("id: {i}")));
            lines.extend(retry.iter().map(|r| format!("retry: {r}")));
            lines.extend(data.iter().map(|d| format!("data: {d}")));
            lines.extend(std::iter::repeat_n(String::new(), 1 + blank));
        }
        let mut text = String::new();
        for (i, line) in lines.iter().enumerate() {
            text.push_str(line);
            text.push_str(["\n", "\r\n", "\r"][ends[i % ends.len()]]);
        }
        text
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(96))]

        /// The oracle is `eventsource-stream` itself, handed the whole stream at once: however
        /// the bytes are cut (inside characters too, between CR and LF), whatever the line
        /// ends, with comments, retries, events without data, runs of blank lines and a leading
        /// byte-order mark (which the parser alone cannot take), the reader reads the same events.
        #[test]
        fn any_cutting_reads_what_the_parser_reads_from_the_whole_stream(
            events in proptest::collection::vec((
                proptest::option::of("[^\r\n]{0,8}"),
                proptest::option::of("[a-zé_]{1,6}"),
                proptest::option::of("[0-9a-fж]{1,4}"),
                proptest::option::of(0..5000u16),
                proptest::collection::vec("[^\r\n]{0,24}", 0..4),
                0..3usize,
            ), 1..16),
            ends in proptest::collection::vec(0..3usize, 1..8),
            cuts in proptest::collection::vec(0..2000usize, 0..24),
            bom: bool,
        ) {
            let text = stream_text(&events, &ends);
            let whole = futures::executor::block_on(
                eventsource_stream::EventStream::new(futures::stream::iter([
                    Ok::<_, std::convert::Infallible>(text.clone().into_bytes()),
                ]))
                .map(|e| e.expect("the parser reads its own stream"))
                .collect::<Vec<_>>(),
            );
            let sent = if bom { format!("\u{feff}{text}") } else { text };
            let mut at: Vec<usize> = cuts.into_iter().map(|c| c % (sent.len() + 1)).collect();
            at.extend([0, sent.len()]);
            at.sort_unstable();
            at.dedup();
            let chunks = at.windows(2).map(|w| sent.as_bytes()[w[0]..w[1]].to_vec()).collect();
            let read = futures::executor::block_on(read_all(chunks));
            proptest::prop_assert_eq!(read, whole);
        }
    }

    #[tokio::test]
    async fn many_events_in_one_chunk_read_as_one_event_a_chunk() {
        for end in ["\n", "\r\n", "\r"] {
            let mut events: Vec<String> = (0..500)
                .map(|i| {
                    let lines = [
                        format!("id: {i}"),
                        "event: message".to_string(),
                        format!("data: {{\"n\":{i},\"text\":\"{}\"}}", "ü".repeat(i % 40)),
                        String::new(),
                    ];
                    lines.map(|line| line + end).concat()
                })
                .collect();
            // A comment line last: the parser waits for the byte after a CR at the very end.
            events[499].push_str(": end\n");
            let whole = events.concat();
            assert_eq!(blank_line_ends(whole.as_bytes()).len(), 500);
            let one = read_all(vec![whole.into_bytes()]).await;
            let each = read_all(events.into_iter().map(String::into_bytes).collect()).await;
            assert_eq!(one.len(), 500, "line ends {end:?}");
            assert_eq!(one, each);
            assert_eq!(one[499].id, "499");
        }
    }

    #[test]
    fn blank_lines_are_found_whatever_their_line_ends() {
        assert_eq!(blank_line_ends(b"data: a\n\ndata: b\n\n"), [9, 18]);
        assert_eq!(blank_line_ends(b"data: a\r\n\r\ndata: b\r\n\r\n"), [11, 22]);
        assert_eq!(blank_line_ends(b"data: a\r\r\ndata: b\n\r\n"), [10, 20]);
        assert_eq!(
            blank_line_ends(b"data: a\r\rdata: b\r\r"),
            [9],
            "a CR last may be half of a CRLF"
        );
        assert_eq!(
            blank_line_ends(b"\n\ndata: a\n"),
            [2],
            "the first line end's line began in an earlier chunk"
        );
        assert!(blank_line_ends(b"\r\ndata: a").is_empty());
    }

    #[tokio::test]
    async fn a_second_byte_order_mark_is_part_of_the_first_field_name() {
        let events = read_all(vec![
            b"\xEF\xBB".to_vec(),
            b"\xBF\xEF\xBB\xBFdata: hidden\n\ndata: seen\n\n".to_vec(),
        ])
        .await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].data, "seen");
    }

    #[tokio::test]
    async fn an_unfinished_event_at_the_end_is_dropped() {
        let events = read_all(vec![b"data: whole\n\ndata: cut".to_vec()]).await;
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "whole");
    }

    #[tokio::test]
    async fn silence_past_the_limit_ends_the_stream_but_slow_bytes_do_not() {
        let slow = futures::stream::iter(STREAM.as_bytes().chunks(8).map(<[u8]>::to_vec)).then(
            |chunk| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok::<_, std::io::Error>(chunk)
            },
        );
        let mut reader = SseReader::limited(slow, Some(Duration::from_millis(200)));
        let mut events = Vec::new();
        while let Some(event) = reader.next().await {
            events.push(event.expect("slow but never silent past the limit"));
        }
        check(&events);

        let silent = futures::stream::iter([Ok::<_, std::io::Error>(b"data: a\n\n".to_vec())])
            .chain(futures::stream::pending());
        let mut reader = SseReader::limited(silent, Some(Duration::from_millis(50)));
        assert_eq!(reader.next().await.unwrap().unwrap().data, "a");
        assert_eq!(
            reader.next().await.unwrap(),
            Err(SseError::Idle(Duration::from_millis(50)))
        );
        assert!(reader.next().await.is_none());
    }
}
