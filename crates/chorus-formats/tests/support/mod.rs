//! What the oracle tests share: the oracle Python, fresh cases drawn each run, kept cases, and
//! one Python process fed all cases at once.

use std::io::Write;
use std::process::{Command, Stdio};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use serde_json::Value;

/// The Python of CHORUS_TEST_PYTHON, or `None` after saying the test was not run (`needs`
/// names what that Python must have).
pub fn python(needs: &str) -> Option<String> {
    let found = std::env::var("CHORUS_TEST_PYTHON").ok();
    if found.is_none() {
        // Straight to stderr: the test harness would hide eprintln! of a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** not run: CHORUS_TEST_PYTHON is not set (a python with {needs}) ***\n"
        );
    }
    found
}

/// The number in the variable `var`, else `default`.
pub fn case_count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// `count` values freshly drawn from `strategy`.
pub fn draw<S: Strategy>(strategy: &S, count: usize) -> Vec<S::Value> {
    let mut runner = TestRunner::default();
    (0..count)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect()
}

/// The kept cases of `path`: one JSON value per line, `#` lines and blank lines skipped.
pub fn kept(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| serde_json::from_str(l).expect("a JSON value per line"))
        .collect()
}

/// Runs `python ARGS` with `input` on its standard input; its standard output, or a failed test
/// naming `what`.
pub fn run(python: &str, args: &[&str], input: Vec<u8>, what: &str) -> Vec<u8> {
    let mut child = Command::new(python)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("CHORUS_TEST_PYTHON={python} cannot run: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        output.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}
