//! The SSE reader against `eventsource-stream` used directly (the anchor), side by side in one
//! run: 500 inbox-sized events (about 1 KiB each) read from one chunk, from a chunk each, and
//! from one chunk whose lines end in CR alone. Prints the medians and the ratio of each pair.
//!
//! `cargo bench -p chorus-agent --bench sse`

use std::convert::Infallible;
use std::time::{Duration, Instant};

use chorus_agent::sse::SseReader;
use criterion::{BenchmarkId, Criterion, Throughput};
use eventsource_stream::Eventsource;
use futures::StreamExt;

const EVENTS: usize = 500;

/// `EVENTS` events shaped as the inbox stream's: an id, a name, one line of JSON data.
fn events() -> Vec<Vec<u8>> {
    events_ending("\n")
}

/// As [`events`], each line ended by `end`.
fn events_ending(end: &str) -> Vec<Vec<u8>> {
    (0..EVENTS)
        .map(|i| {
            let text = "x".repeat(900);
            format!(
                "id: 4f1c2a9e01b7-{i}\nevent: message\ndata: {{\"message_id\":\"m-{i}\",\"attempt\":1,\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n\n"
            )
            .replace('\n', end)
            .into_bytes()
        })
        .collect()
}

fn anchor(chunks: &[Vec<u8>]) -> usize {
    let chunks = chunks.iter().cloned().map(Ok::<_, Infallible>);
    futures::executor::block_on(futures::stream::iter(chunks).eventsource().count())
}

fn reader(chunks: &[Vec<u8>]) -> usize {
    let chunks: Vec<_> = chunks.iter().cloned().map(Ok::<_, Infallible>).collect();
    let mut reader = SseReader::new(futures::stream::iter(chunks));
    futures::executor::block_on(async {
        let mut n = 0;
        while let Some(event) = reader.next().await {
            event.expect("an event");
            n += 1;
        }
        n
    })
}

/// The median time of `runs` calls of `f`.
fn median(runs: usize, f: impl Fn() -> usize) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let began = Instant::now();
            assert_eq!(f(), EVENTS);
            began.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let each = events();
    let one = vec![each.concat()];
    // A comment line last: the parser waits for the byte after a CR at the very end.
    let cr = vec![[events_ending("\r").concat(), b": end\n".to_vec()].concat()];
    let mut group = c.benchmark_group("sse");
    group.throughput(Throughput::Elements(EVENTS as u64));
    let shapes = [
        ("one chunk", &one),
        ("a chunk each", &each),
        ("one chunk, CR", &cr),
    ];
    for (shape, chunks) in shapes {
        group.bench_with_input(
            BenchmarkId::new("eventsource-stream", shape),
            chunks,
            |b, c| b.iter(|| anchor(c)),
        );
        group.bench_with_input(BenchmarkId::new("SseReader", shape), chunks, |b, c| {
            b.iter(|| reader(c))
        });
    }
    group.finish();
    c.final_summary();
    println!(
        "\n{EVENTS} events of about 1 KiB; the middle of three medians of 17 runs, taken in turn:"
    );
    for (shape, chunks) in shapes {
        let (mut a, mut r) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            a.push(median(17, || anchor(chunks)));
            r.push(median(17, || reader(chunks)));
        }
        a.sort();
        r.sort();
        println!(
            "{shape:<13} eventsource-stream {:>10.3?}  SseReader {:>10.3?}  reader / anchor {:.2}",
            a[1],
            r[1],
            r[1].as_secs_f64() / a[1].as_secs_f64()
        );
    }
}
