//! Token counting of pathological text — long unbroken runs that the pre-tokenizer leaves as one
//! piece — with chorus (`BpeEncoding::O200kBase`) beside bpe-openai's `o200k_base`, tiktoken-rs
//! `o200k_base` (`encode_ordinary().len()`) and chorus-harmony's encoder alone (what chorus counted
//! with before; its merge is quadratic in a piece's length), in the same run, identical counts
//! checked first.
//!
//! Inputs: a long word (`a` repeated), a long CJK run, a long punctuation run, a long whitespace
//! run, and one word of mixed letters and marks; at 10,000 characters for all four, 100,000 and
//! 1,000,000 for the linear two. After the criterion groups it prints medians, the ratios to the
//! anchors, and chorus's and bpe-openai's growth per tenfold length (10x for linear time).
//!
//! Run: `cargo bench -p chorus-context --bench pathological` (about 45 s).

use std::hint::black_box;
use std::time::{Duration, Instant};

use chorus_context::{BpeEncoding, TextTokenizer};
use criterion::Criterion;

/// (name, repeated unit): each input is `unit` repeated to the size wanted.
const INPUTS: [(&str, &str); 5] = [
    ("long word", "a"),
    ("CJK run", "天"),
    ("punctuation run", "!"),
    ("whitespace run", " "),
    ("mixed word", "aé\u{301}b"),
];

fn input(unit: &str, chars: usize) -> String {
    unit.repeat(chars / unit.chars().count())
}

fn chorus(text: &str) -> usize {
    BpeEncoding::O200kBase.count(text)
}

fn bpe_openai(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
}

fn harmony_encoder(text: &str) -> usize {
    chorus_harmony::encoding().encode_ordinary(text).len()
}

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
    let tiktoken = tiktoken_rs::o200k_base().unwrap();
    let tiktoken_count = |text: &str| tiktoken.encode_ordinary(text).len();

    // Identical counts first.
    for (name, unit) in INPUTS {
        for chars in [10_000, 100_000] {
            let text = input(unit, chars);
            assert_eq!(chorus(&text), bpe_openai(&text), "{name} {chars}");
        }
        let text = input(unit, 10_000);
        assert_eq!(chorus(&text), tiktoken_count(&text), "{name}");
        assert_eq!(chorus(&text), harmony_encoder(&text), "{name}");
    }

    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(500))
        .configure_from_args();
    for (name, unit) in INPUTS {
        let small = input(unit, 10_000);
        let large = input(unit, 100_000);
        let mut group = c.benchmark_group(format!("pathological/{name}"));
        group.bench_function("chorus 10k", |b| b.iter(|| chorus(black_box(&small))));
        group.bench_function("bpe-openai 10k", |b| {
            b.iter(|| bpe_openai(black_box(&small)))
        });
        group.bench_function("tiktoken-rs 10k", |b| {
            b.iter(|| tiktoken_count(black_box(&small)))
        });
        group.bench_function("chorus-harmony encoder 10k", |b| {
            b.iter(|| harmony_encoder(black_box(&small)))
        });
        group.bench_function("chorus 100k", |b| b.iter(|| chorus(black_box(&large))));
        group.bench_function("bpe-openai 100k", |b| {
            b.iter(|| bpe_openai(black_box(&large)))
        });
        group.finish();
    }

    println!("\nmedians of 5 runs each:");
    for (name, unit) in INPUTS {
        let texts = [10_000, 100_000, 1_000_000].map(|n| input(unit, n));
        let time = |f: fn(&str) -> usize, text: &str| {
            median(5, || {
                black_box(f(text));
            })
        };
        let ours = texts.each_ref().map(|t| time(chorus, t));
        let bpe = texts.each_ref().map(|t| time(bpe_openai, t));
        let tik = median(5, || {
            black_box(tiktoken_count(&texts[0]));
        });
        let before = time(harmony_encoder, &texts[0]);
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        println!(
            "{name:>16}, 10k chars: chorus {:?}, bpe-openai {:?} ({:.2}x chorus), tiktoken-rs {tik:?} ({:.1}x), \
             chorus-harmony encoder {before:?} ({:.1}x)",
            ours[0],
            bpe[0],
            ratio(bpe[0], ours[0]),
            ratio(tik, ours[0]),
            ratio(before, ours[0]),
        );
        println!(
            "{:>16}  100k / 1M chars: chorus {:?} / {:?} (growth {:.1}x, {:.1}x), bpe-openai {:?} / {:?} (growth {:.1}x, {:.1}x)",
            "",
            ours[1],
            ours[2],
            ratio(ours[1], ours[0]),
            ratio(ours[2], ours[1]),
            bpe[1],
            bpe[2],
            ratio(bpe[1], bpe[0]),
            ratio(bpe[2], bpe[1]),
        );
    }
}
