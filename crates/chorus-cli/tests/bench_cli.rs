//! `chorus bench bus` through the real binary: one JSON report on stdout with `--json` (a line
//! for people without), `--duration` ending the publishing early, a progress bar on a terminal only, and exit code 2 for bad arguments and
//! stores that cannot be opened.

mod common;

use std::process::Command;

use serde_json::{Map, Value};

use common::{chorus, code, stderr, stdout};

/// The report's fields, as issue 6 names them.
const FIELDS: [&str; 7] = [
    "sent",
    "received",
    "lost",
    "duplicates",
    "throughput_msgs_per_s",
    "p50_ms",
    "p99_ms",
];

/// Parses the one JSON object on `text` and checks it has exactly the report's fields.
fn report(text: &str) -> Map<String, Value> {
    report_with(text, &[])
}

/// As [`report`], with the fields `extra` beside the report's.
fn report_with(text: &str, extra: &[&str]) -> Map<String, Value> {
    // On a terminal the line may follow the codes that cleared the progress bar.
    let lines: Vec<&str> = text
        .lines()
        .filter_map(|l| l.find("{\"").map(|at| &l[at..]))
        .collect();
    assert_eq!(lines.len(), 1, "one JSON line expected in {text:?}");
    let Value::Object(report) = serde_json::from_str(lines[0].trim_end()).unwrap() else {
        panic!("not an object: {}", lines[0]);
    };
    let mut keys: Vec<&str> = report.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = FIELDS.to_vec();
    expected.extend_from_slice(extra);
    expected.sort_unstable();
    assert_eq!(keys, expected);
    report
}

fn number(report: &Map<String, Value>, field: &str) -> f64 {
    report[field].as_f64().unwrap()
}

/// Checks that every message sent was received once and the figures are consistent.
fn nothing_lost(report: &Map<String, Value>) {
    let sent = number(report, "sent");
    assert!(sent > 0.0, "{report:?}");
    assert_eq!(number(report, "received"), sent, "{report:?}");
    assert_eq!(
        (number(report, "lost"), number(report, "duplicates")),
        (0.0, 0.0)
    );
    assert!(number(report, "throughput_msgs_per_s") > 0.0);
    let (p50, p99) = (number(report, "p50_ms"), number(report, "p99_ms"));
    assert!(0.0 <= p50 && p50 <= p99, "p50 {p50} p99 {p99}");
}

/// Both stores deliver every message once; SQLite is also measured against its floor (plain
/// SQL on the same rows, in a file beside the bench's, removed after), whose report and
/// chorus's ratio to it come with chorus's own.
#[test]
fn memory_and_sqlite_deliver_every_message_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.db");
    for backend in ["memory".to_owned(), format!("sqlite:{}", file.display())] {
        let sqlite = backend.starts_with("sqlite:");
        let out = chorus(
            &[
                "bench",
                "bus",
                "--backend",
                &backend,
                "--messages",
                "3000",
                "--consumers",
                "3",
                "--size",
                "512",
                "--json",
            ],
            "",
        );
        assert_eq!(code(&out), 0, "{backend}: {}", stderr(&out));
        let extra: &[&str] = if sqlite {
            &["floor", "ratio_to_floor"]
        } else {
            &[]
        };
        let report = report_with(&stdout(&out), extra);
        nothing_lost(&report);
        assert_eq!(number(&report, "sent"), 3000.0, "{backend}");
        // Standard error is not a terminal here: no progress bar, only what is measured next.
        let said = if sqlite {
            "chorus bench bus: measuring the floor (plain SQL, same rows)...\n"
        } else {
            ""
        };
        assert_eq!(stderr(&out), said, "{backend}");
        if sqlite {
            let floor = report["floor"].as_object().unwrap();
            nothing_lost(floor);
            assert_eq!(number(floor, "sent"), 3000.0);
            let ratio = number(&report, "ratio_to_floor");
            let expected =
                number(&report, "throughput_msgs_per_s") / number(floor, "throughput_msgs_per_s");
            assert!((ratio - expected).abs() < 1e-9, "{ratio} {expected}");
        }
    }
    assert!(file.exists(), "the sqlite store is the file named");
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert!(
        left.iter().all(|n| !n.contains("floor")),
        "the floor's file is removed: {left:?}"
    );
}

#[test]
fn duration_ends_the_publishing_early() {
    let out = chorus(
        &[
            "bench",
            "bus",
            "--backend",
            "memory",
            "--messages",
            "5000000",
            "--duration",
            "0.3",
        ],
        "",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // Without --json: one line for people, with the same figures.
    let text = stdout(&out);
    let figures: Vec<f64> = text
        .split([',', ';', ' '])
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(figures.len(), 7, "{text}");
    let (sent, received, lost, duplicates) = (figures[0], figures[1], figures[2], figures[3]);
    assert!(
        text.starts_with("sent ") && text.contains(" msgs/s; latency p50 "),
        "{text}"
    );
    assert!(0.0 < sent && sent < 5_000_000.0, "{text}");
    assert_eq!((received, lost, duplicates), (sent, 0.0, 0.0), "{text}");
    assert!(figures[5] <= figures[6], "p50 after p99: {text}");
}

#[test]
fn bad_arguments_and_stores_exit_2_with_the_reason() {
    let missing_dir = tempfile::tempdir().unwrap().path().join("gone/bench.db");
    let sqlite = format!("sqlite:{}", missing_dir.display());
    for (args, said) in [
        (
            vec!["--backend", "kafka://127.0.0.1:9092"],
            "unknown backend",
        ),
        (
            vec!["--backend", "memory", "--duration", "0"],
            "--duration must be a positive number of seconds",
        ),
        (
            vec!["--backend", "memory", "--duration", "1e30"],
            "--duration must be a positive number of seconds",
        ),
        (vec!["--backend", "memory", "--messages", "many"], "many"),
        (vec!["--backend", &sqlite], "gone"),
        // 127.0.0.1:1 refuses connections; a build without the feature names it.
        (
            vec!["--backend", "nats://127.0.0.1:1"],
            if cfg!(feature = "nats") {
                "cannot connect"
            } else {
                "cargo feature `nats`"
            },
        ),
        (
            vec!["--backend", "redis://127.0.0.1:1"],
            if cfg!(feature = "redis") {
                "cannot connect"
            } else {
                "cargo feature `redis`"
            },
        ),
    ] {
        let mut all = vec!["bench", "bus"];
        all.extend(&args);
        let out = chorus(&all, "");
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}");
        assert!(
            stderr(&out).contains(said),
            "{args:?}: expected {said:?} in {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_terminal_sees_the_progress_bar() {
    // `script` (util-linux, in every Debian base system) runs the command on a pseudo-terminal.
    let command = format!(
        "{} bench bus --backend memory --messages 400000 --consumers 2 --json",
        env!("CARGO_BIN_EXE_chorus")
    );
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("`script` (util-linux) runs; it gives the command a terminal");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // A line drawn while the run was under way: counts with thousands separators, a rate.
    let drawn = text.split(['\r', '\n']).any(|line| {
        line.contains("/400,000 received, ") && line.contains(" sent, ") && line.ends_with("/s")
    });
    assert!(drawn, "no progress line in {text:?}");
    nothing_lost(&report(&text));
}
