//! A reader that closes the pipe early (`chorus … | head -1`) ends every command quietly:
//! exit 0, nothing on standard error about the pipe, no panic. Through the real binary.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::json;

use common::repo;

/// What a command did when its output pipe was closed early.
struct Closed {
    status: ExitStatus,
    stderr: String,
    /// The lines read before the pipe was closed.
    read: Vec<String>,
}

/// Runs `chorus ARGS` in `dir` and closes its standard output after reading `lines` lines
/// (0: before it writes anything, so the first write meets a closed pipe).
fn closed_after(dir: &Path, args: &[&str], lines: usize) -> Closed {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let read: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .take(lines)
        .map(Result::unwrap)
        .collect();
    let status = child.wait().unwrap();
    Closed {
        status,
        stderr: errors.join().unwrap(),
        read,
    }
}

/// Why the command did not end quietly, if it did not.
fn noise(closed: &Closed) -> Option<String> {
    if closed.status.code() != Some(0) {
        return Some(format!("{:?}, stderr: {}", closed.status, closed.stderr));
    }
    ["panicked", "Broken pipe", "broken pipe", "cannot write"]
        .into_iter()
        .find(|word| closed.stderr.contains(word))
        .map(|word| format!("{word:?} on stderr: {}", closed.stderr))
}

fn assert_quiet(what: &str, closed: &Closed) {
    if let Some(noise) = noise(closed) {
        panic!("{what}: {noise}");
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_owned()
}

#[test]
fn every_printing_command_ends_quietly_when_the_reader_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let seeds = repo().join("examples/seeds");
    let seed = |name: &str| seeds.join(name).to_str().unwrap().to_owned();
    let chat = json!({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4"}
    ]})
    .to_string();
    let chat = write(dir.path(), "chat.json", &chat);
    let harmony = json!({"messages": [
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "channel": "final", "content": "4"}
    ]})
    .to_string();
    let harmony = write(dir.path(), "harmony.json", &harmony);
    let flow = repo().join("examples/support-desk.toml");
    let flow = flow.to_str().unwrap();
    let escalation = seed("003-escalation.json");
    let invalid = seed("invalid/003-python-invalid-escalation.json");
    let commands: Vec<Vec<&str>> = vec![
        vec!["validate", &escalation],
        vec!["validate", &invalid, &escalation],
        vec!["validate", "--format", "json", &invalid],
        vec!["formats"],
        vec!["formats", "--json"],
        vec!["schema", "handoff"],
        vec!["harmony", "render", &harmony],
        vec!["harmony", "render", "--output", "text", &harmony],
        vec![
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "anthropic",
            &chat,
        ],
        vec!["count", "--model", "gpt-4o", "--from", "openai-chat", &chat],
        vec![
            "trim",
            "--model",
            "gpt-4o",
            "--from",
            "openai-chat",
            "--max-tokens",
            "1000",
            &chat,
        ],
        vec!["run", flow],
        vec!["serve", "--hash-token", "secret"],
        vec!["--help"],
        vec!["validate", "--help"],
    ];
    let noisy: Vec<String> = commands
        .iter()
        .filter_map(|args| {
            let closed = closed_after(dir.path(), args, 0);
            noise(&closed).map(|noise| format!("chorus {}: {noise}", args.join(" ")))
        })
        .collect();
    assert!(
        noisy.is_empty(),
        "{} of {} commands:\n{}",
        noisy.len(),
        commands.len(),
        noisy.join("\n")
    );
}

#[test]
fn validate_stops_quietly_after_the_lines_that_were_read() {
    let dir = tempfile::tempdir().unwrap();
    // Far more output than a pipe buffers, so the pipe is closed while chorus still writes.
    let line = json!({"role": "user", "content": "hi"}).to_string();
    let many = format!("{line}\n").repeat(20_000);
    let file = write(dir.path(), "many.jsonl", &many);
    let closed = closed_after(dir.path(), &["validate", &file], 1);
    assert_quiet("validate many.jsonl | head -1", &closed);
    assert_eq!(closed.read, ["many.jsonl:1: ok (message)"]);

    let files: Vec<String> = (0..8000)
        .map(|i| write(dir.path(), &format!("m{i}.json"), &line))
        .collect();
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let closed = closed_after(dir.path(), &args, 2);
    assert_quiet("validate m*.json | head -2", &closed);
    assert_eq!(
        closed.read,
        ["m0.json: ok (message)", "m1.json: ok (message)"]
    );
}

#[test]
fn other_write_errors_are_reported_with_exit_2() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        // Straight to stderr: the test harness would hide eprintln! of a passing test.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"\n*** not run: no /dev/full on this system ***\n",
        );
        return;
    }
    let output = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .arg("formats")
        .stdout(std::fs::File::create(full).unwrap())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("cannot write to standard output"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}
