//! chorus-context against its anchors, side by side in one run:
//! - counting a 10 MB mixed corpus with chorus (chorus-harmony's o200k encoder) vs tiktoken-rs `o200k_base`
//!   (`encode_ordinary().len()`), with identical counts checked first;
//! - re-trimming a 10,000-message history after one append with cached per-message counts vs a
//!   full recount (the same strategy on the same messages).
//!
//! After the criterion groups it prints medians and ratios.
//!
//! Run: `cargo bench -p chorus-context --bench context`

use std::hint::black_box;
use std::time::{Duration, Instant};

use chorus_context::trim::History;
use chorus_context::{BpeEncoding, TextTokenizer, TokenCounter};
use chorus_core::{ContentPart, Message, Nullable, Role, ToolCall};
use criterion::{BatchSize, Criterion};
use serde_json::json;

/// A deterministic generator (64-bit LCG).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

const ENGLISH: [&str; 16] = [
    "the",
    "agent",
    "calls",
    "a",
    "tool",
    "and",
    "waits",
    "for",
    "its",
    "result",
    "before",
    "answering",
    "weather",
    "in",
    "Paris,",
    "tomorrow.",
];
const CODE: [&str; 6] = [
    "fn main() {\n    println!(\"{}\", 42);\n}\n",
    "for (i, x) in items.iter().enumerate() {\n\tif x > &0 { total += i; }\n}\n",
    "def count(xs):\n    return sum(1 for x in xs if x)\n",
    "    let mut map = HashMap::new();\n",
    "SELECT id, name FROM users WHERE age > 30;\n",
    "  }\n\n\n",
];
const JSON: [&str; 3] = [
    "{\"city\": \"Austin\", \"temp\": 31.5, \"days\": [1, 2, 3]}",
    "{\"status\": \"error\", \"error_type\": \"InvalidDateRange\", \"message\": \"end before start\"}",
    "[{\"id\": \"SK983\", \"price_eur\": 612}, {\"id\": \"AY73\", \"price_eur\": 655}]",
];
const OTHER: [&str; 6] = [
    "お誕生日おめでとうございます。",
    "Привет, как дела? Погода в Москве хорошая.",
    "数据消息会被合并成一条文本消息。",
    "emoji 👩‍💻🚀 and accents café naïve",
    "1234567890 3.14159 2026-11-23T12:00:00Z",
    "   \r\n\t  ",
];

/// About `bytes` of mixed text in documents of 2-8 KB.
fn corpus(bytes: usize) -> Vec<String> {
    let mut rng = Rng(7);
    let mut docs = Vec::new();
    let mut total = 0;
    while total < bytes {
        let size = 2048 + rng.next() % 6144;
        let mut doc = String::with_capacity(size + 128);
        while doc.len() < size {
            match rng.next() % 10 {
                0..=4 => {
                    for _ in 0..12 {
                        doc.push_str(rng.pick(&ENGLISH));
                        doc.push(' ');
                    }
                }
                5 | 6 => doc.push_str(rng.pick(&CODE)),
                7 => doc.push_str(rng.pick(&JSON)),
                _ => doc.push_str(rng.pick(&OTHER)),
            }
        }
        total += doc.len();
        docs.push(doc);
    }
    docs
}

/// A 10,000-message agent history: turns of user text (some with an image), tool calls with
/// results, and answers.
fn history_messages(n: usize) -> Vec<Message> {
    let mut rng = Rng(11);
    let mut out = vec![Message::new(
        Role::System,
        "You are a travel agent. Be brief.",
    )];
    let mut id = 0;
    while out.len() < n {
        let words: String = (0..5 + rng.next() % 30)
            .map(|_| rng.pick(&ENGLISH))
            .collect::<Vec<_>>()
            .join(" ");
        if rng.next().is_multiple_of(5) {
            let image: ContentPart = serde_json::from_value(json!({"type": "image_url",
                "image_url": {"url": "https://example.com/p.jpg", "detail": "high", "width": 1600, "height": 1200}}))
            .unwrap();
            out.push(Message::with_parts(
                Role::User,
                vec![ContentPart::text(words.clone()), image],
            ));
        } else {
            out.push(Message::new(Role::User, words.clone()));
        }
        if rng.next().is_multiple_of(2) {
            id += 1;
            let mut call = Message::new(Role::Assistant, "");
            let call_id = format!("call_{id}");
            call.tool_calls = Nullable::Value(vec![ToolCall::function(
                &call_id,
                "search",
                &json!({"q": words}),
            )]);
            out.push(call);
            let mut result = Message::new(Role::Tool, rng.pick(&JSON));
            result.tool_call_id = Some(call_id);
            out.push(result);
        }
        out.push(Message::new(Role::Assistant, words));
    }
    out.truncate(n);
    out
}

/// CPU time the calling thread has used.
fn thread_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec and the clock id is a constant of this platform.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Wall and thread CPU time of one call of `f`.
fn wall_and_cpu(f: impl FnOnce()) -> (Duration, Duration) {
    let (wall, cpu) = (Instant::now(), thread_cpu_time());
    f();
    (wall.elapsed(), thread_cpu_time() - cpu)
}

/// Median wall time of `runs` calls of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let docs = corpus(10 * 1024 * 1024);
    let bytes: usize = docs.iter().map(String::len).sum();
    let tiktoken = tiktoken_rs::o200k_base().unwrap();
    let ours = |docs: &[String]| {
        docs.iter()
            .map(|d| BpeEncoding::O200kBase.count(d))
            .sum::<usize>()
    };
    let theirs = |docs: &[String]| {
        docs.iter()
            .map(|d| tiktoken.encode_ordinary(d).len())
            .sum::<usize>()
    };
    let (a, b) = (ours(&docs), theirs(&docs));
    assert_eq!(a, b, "token counts differ from tiktoken-rs");
    println!(
        "corpus: {} documents, {bytes} bytes, {a} o200k_base tokens (identical in both)",
        docs.len()
    );

    let counter = TokenCounter::for_model("gpt-4o").unwrap();
    let messages = history_messages(10_000);
    let base = History::from_messages(counter.clone(), &[], &messages).unwrap();
    let budget = base.total() / 2;
    let appended = Message::new(Role::User, "And what about the hotel near the station?");
    let mut all = messages.clone();
    all.push(appended.clone());
    let incremental = |h: &mut History| {
        h.push(appended.clone()).unwrap();
        h.plan(budget, None).unwrap()
    };
    // A history that grew by appends has spare capacity; a clone has none, so reserve it.
    let grown = || {
        let mut h = base.clone();
        h.reserve(1);
        h
    };
    let recount = || {
        History::from_messages(counter.clone(), &[], &all)
            .unwrap()
            .plan(budget, None)
            .unwrap()
    };
    assert_eq!(
        incremental(&mut base.clone()),
        recount(),
        "cached and recounted plans differ"
    );

    let mut c = Criterion::default().sample_size(10).configure_from_args();
    let mut group = c.benchmark_group("count_10MB_o200k");
    group.bench_function("chorus", |bench| bench.iter(|| black_box(ours(&docs))));
    group.bench_function("tiktoken-rs", |bench| {
        bench.iter(|| black_box(theirs(&docs)))
    });
    group.finish();
    let mut group = c.benchmark_group("retrim_10k_after_append");
    group.bench_function("cached", |bench| {
        bench.iter_batched_ref(grown, |h| black_box(incremental(h)), BatchSize::LargeInput)
    });
    group.bench_function("full_recount", |bench| bench.iter(|| black_box(recount())));
    group.finish();
    c.final_summary();

    // Interleaved rounds, so a burst of load on the shared machine hits both sides alike; the
    // thread's CPU time is taken too, as it leaves out the time other processes held the core.
    let (mut ours_runs, mut theirs_runs) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        ours_runs.push(wall_and_cpu(|| {
            black_box(ours(&docs));
        }));
        theirs_runs.push(wall_and_cpu(|| {
            black_box(theirs(&docs));
        }));
    }
    let mid = |runs: Vec<Duration>| {
        let mut times = runs;
        times.sort();
        times[times.len() / 2]
    };
    let (ours_wall, ours_cpu): (Vec<_>, Vec<_>) = ours_runs.into_iter().unzip();
    let (theirs_wall, theirs_cpu): (Vec<_>, Vec<_>) = theirs_runs.into_iter().unzip();
    let mb = bytes as f64 / 1e6;
    for (what, ours_t, theirs_t) in [
        ("wall", mid(ours_wall), mid(theirs_wall)),
        ("cpu", mid(ours_cpu), mid(theirs_cpu)),
    ] {
        println!(
            "count 10 MB o200k_base, {what} time, medians of 7 interleaved runs: chorus {:?} ({:.1} MB/s), tiktoken-rs {:?} ({:.1} MB/s), ratio {:.2}x",
            ours_t,
            mb / ours_t.as_secs_f64(),
            theirs_t,
            mb / theirs_t.as_secs_f64(),
            theirs_t.as_secs_f64() / ours_t.as_secs_f64()
        );
    }
    // Each run appends to its own copy; copying and dropping stay outside the timed part.
    let timed = |make: &dyn Fn() -> History| {
        let mut times: Vec<Duration> = (0..31)
            .map(|_| {
                let mut h = make();
                let start = Instant::now();
                black_box(incremental(&mut h));
                start.elapsed()
            })
            .collect();
        times.sort();
        times[times.len() / 2]
    };
    let cached_t = timed(&grown);
    let unreserved_t = timed(&|| base.clone());
    let full_t = median(3, || {
        black_box(recount());
    });
    println!(
        "re-trim 10,000 messages after one append: cached {:?} (into a clone without spare capacity: {:?}), full recount {:?}, ratio {:.0}x",
        cached_t,
        unreserved_t,
        full_t,
        full_t.as_secs_f64() / cached_t.as_secs_f64()
    );
}
