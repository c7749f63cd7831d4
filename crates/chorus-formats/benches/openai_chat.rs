//! Decode + encode of Chat Completions requests against the floor: a plain `serde_json::Value`
//! parse + serialize of the same bytes. After the criterion groups it prints medians, the ratio
//! and text messages per second on one core.
//!
//! Run: `cargo bench -p chorus-formats --bench openai_chat`

use std::hint::black_box;
use std::time::{Duration, Instant};

use chorus_formats::{Codec, EncodeOptions, OpenAiChat};
use criterion::Criterion;
use serde_json::{Value, json};

const MESSAGES: usize = 1_000;

/// A request of `MESSAGES` text messages (system, then user and assistant turns).
fn request() -> String {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a helpful assistant. Answer briefly and cite sources."}),
    ];
    for i in 1..MESSAGES {
        let message = if i % 2 == 1 {
            json!({"role": "user", "content": format!("Question {i}: what is the weather in Paris tomorrow, and should I take an umbrella?")})
        } else {
            json!({"role": "assistant", "content": format!("Answer {i}: tomorrow in Paris will be 18 °C with light rain in the afternoon; take an umbrella.")})
        };
        messages.push(message);
    }
    json!({"model": "gpt-4o", "temperature": 0.2, "messages": messages}).to_string()
}

fn floor(input: &str) -> String {
    let value: Value = serde_json::from_str(input).unwrap();
    serde_json::to_string(&value).unwrap()
}

fn chorus(input: &str) -> String {
    let conversation = OpenAiChat::decode_str(input).unwrap();
    let encoded = OpenAiChat::encode(&conversation, &EncodeOptions::default()).unwrap();
    serde_json::to_string(&encoded.value).unwrap()
}

/// Median and fastest wall time of `runs` calls of `f`.
fn timings(runs: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    (times[runs / 2], times[0])
}

fn main() {
    let input = request();
    let same: Value = serde_json::from_str(&chorus(&input)).unwrap();
    assert!(
        same == serde_json::from_str::<Value>(&input).unwrap(),
        "decode + encode must give the same request back"
    );
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("openai_chat_1000_text_messages");
    group.bench_function("serde_json_value_parse_serialize (floor)", |b| {
        b.iter(|| floor(black_box(&input)))
    });
    group.bench_function("chorus_decode_encode", |b| {
        b.iter(|| chorus(black_box(&input)))
    });
    group.finish();
    criterion.final_summary();

    let (floor_median, floor_best) = timings(301, || {
        black_box(floor(black_box(&input)));
    });
    let (ours_median, ours_best) = timings(301, || {
        black_box(chorus(black_box(&input)));
    });
    println!("input: {MESSAGES} text messages, {} bytes", input.len());
    for (what, floor_time, ours) in [
        ("median", floor_median, ours_median),
        ("fastest", floor_best, ours_best),
    ] {
        let ratio = ours.as_secs_f64() / floor_time.as_secs_f64();
        let per_second = MESSAGES as f64 / ours.as_secs_f64();
        println!(
            "{what} of 301: floor (Value parse + serialize) {floor_time:?}, chorus (decode + encode + serialize) {ours:?}, \
             ratio {ratio:.2} (target <= 2.0), {per_second:.0} text messages/s (target >= 1,000,000)"
        );
    }
}
