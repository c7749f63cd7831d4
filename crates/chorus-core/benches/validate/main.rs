//! Validation throughput on a realistic mixed corpus, side by side with the Python `jsonschema`
//! package (the anchor) validating the same corpus against the same schemas; prints the ratio.
//!
//! `cargo bench -p chorus-core --bench validate` (the anchor needs `pip install jsonschema`).

mod corpus;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use chorus_core::{Kind, Validator};
use criterion::{Criterion, Throughput, criterion_group};

const DOCS: usize = 10_000;

fn validate_all(validator: &Validator, docs: &[Vec<u8>]) -> usize {
    docs.iter()
        .filter(|doc| !validator.validate_bytes(doc, None).is_valid())
        .count()
}

fn bench(c: &mut Criterion) {
    let docs = corpus::corpus(DOCS);
    let validator = Validator::new();
    assert_eq!(validate_all(&validator, &docs), 0, "the corpus is valid");
    let mut group = c.benchmark_group("validate");
    group.throughput(Throughput::Elements(DOCS as u64));
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("chorus_mixed_corpus_10k", |b| {
        b.iter(|| validate_all(&validator, &docs))
    });
    group.finish();
}

/// Median docs/s of chorus over `rounds` full passes, measured the same way as the anchor.
fn chorus_docs_per_s(docs: &[Vec<u8>], rounds: usize) -> f64 {
    let validator = Validator::new();
    let mut timings: Vec<f64> = (0..rounds)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(validate_all(&validator, docs));
            start.elapsed().as_secs_f64()
        })
        .collect();
    timings.sort_by(f64::total_cmp);
    docs.len() as f64 / timings[rounds / 2]
}

fn compare_with_python() {
    let docs = corpus::corpus(DOCS);
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/chorus-bench");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let corpus_path = dir.join("validate-corpus.jsonl");
    let mut lines = Vec::new();
    for doc in &docs {
        lines.extend_from_slice(doc);
        lines.push(b'\n');
    }
    std::fs::write(&corpus_path, lines).expect("write corpus");
    for kind in [Kind::Message, Kind::Handoff, Kind::HarmonyHandoff] {
        let text = serde_json::to_string(&kind.schema()).expect("schema");
        std::fs::write(dir.join(format!("{}.schema.json", kind.name())), text)
            .expect("write schema");
    }
    let chorus = chorus_docs_per_s(&docs, 7);
    println!(
        "chorus: {chorus:.0} documents/s (median of 7 passes over {DOCS} documents, one core)"
    );
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/validate/anchor.py");
    let output = Command::new("python3")
        .arg(&script)
        .arg(&corpus_path)
        .arg(&dir)
        .arg("3")
        .output();
    match output {
        Ok(out) if out.status.success() => {
            let result: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("anchor prints JSON");
            let python = result["docs_per_s"].as_f64().expect("docs_per_s");
            println!(
                "python jsonschema {}: {python:.0} documents/s ({} invalid)",
                result["jsonschema"], result["invalid"]
            );
            println!("ratio chorus / python-jsonschema: {:.1}x", chorus / python);
        }
        Ok(out) => println!(
            "anchor not run: python3 {} failed: {} (pip install jsonschema)",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ),
        Err(e) => println!("anchor not run: cannot start python3: {e}"),
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    compare_with_python();
}
