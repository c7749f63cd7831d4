//! `chorus serve` through the real binary: defaults with no setup, the printed address, a
//! request over HTTP, a clean stop on SIGTERM, usage errors.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Sends one HTTP/1.1 request and returns the whole answer.
fn http(addr: &str, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn serves_with_no_setup_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_owned();
    assert!(first.contains("sqlite:./chorus.db"), "{first}");
    let token_line = lines.next().unwrap().unwrap();
    let token = token_line.rsplit(' ').next().unwrap().to_owned();
    assert_eq!(token.len(), 64, "{token_line}");

    let health = http(
        &addr,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let metrics = http(
        &addr,
        &format!(
            "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(metrics.contains("chorus_published_total 0"), "{metrics}");
    assert!(
        dir.path().join("chorus.db").exists(),
        "the default store is ./chorus.db"
    );

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "chorus serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status:?}");
    assert_eq!(lines.next().unwrap().unwrap(), "chorus serve: stopped");
}

#[test]
fn refuses_a_bad_store_and_a_bad_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("chorus.toml");
    std::fs::write(&config, "[agents.alice]\ntoken_sha256 = \"plain-secret\"\n").unwrap();
    for (args, fragment) in [
        (vec!["serve", "--store", "postgres://x"], "unknown backend"),
        (
            vec!["serve", "--config", config.to_str().unwrap()],
            "64 hex digits",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(fragment), "{args:?}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["serve", "--hash-token", "test"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    );
}
