//! `chorus serve` through the real binary: defaults with no setup, the printed address, a
//! request over HTTP, a clean stop on SIGTERM, usage errors.

mod common;

use std::process::{Command, Stdio};

use common::{Served, http};

#[test]
fn serves_with_no_setup_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start(dir.path(), &[], Stdio::piped());
    let addr = served.addr.clone();
    let first = &served.first_line;
    assert!(first.contains("sqlite:./chorus.db"), "{first}");
    let token = served.admin_token();
    assert_eq!(token.len(), 64, "{token}");

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

    let status = served.stop();
    assert!(status.success(), "{status:?}");
    assert_eq!(served.next_line(), "chorus serve: stopped");
}

#[test]
fn refuses_a_bad_store_and_a_bad_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("chorus.toml");
    std::fs::write(&config, "[agents.alice]\ntoken_sha256 = \"plain-secret\"\n").unwrap();
    for (args, fragment) in [
        (vec!["serve", "--store", "mongodb://x"], "unknown backend"),
        (vec!["serve", "--store", "postgres://x"], "names no user"),
        // A bare port, and the --port other servers take, get the HOST:PORT form to use.
        (
            vec!["serve", "--listen", "18101"],
            "--listen 127.0.0.1:18101",
        ),
        (vec!["serve", "--listen", "localhost"], "expected HOST:PORT"),
        (vec!["serve", "--port", "18101"], "--listen 127.0.0.1:18101"),
        (
            vec!["serve", "--config", config.to_str().unwrap()],
            "64 hex digits",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
            .args(&args)
            .current_dir(dir.path())
            .env_remove("PGUSER")
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

#[test]
fn text_logs_on_a_pipe_have_no_colour_and_a_bad_log_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = Served::start_with(
        dir.path(),
        &["--store", "memory", "--log-format", "text"],
        Stdio::piped(),
        |command| {
            command.env("CHORUS_LOG", "chorus_server=debug,tower_http=debug");
            command.env_remove("NO_COLOR");
        },
    );
    served.keep_reading();
    let health = http(
        &served.addr,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nx-request-id: plain-1\r\nConnection: close\r\n\r\n",
    );
    assert!(health.contains("x-request-id: plain-1"), "{health}");
    let status = served.stop();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut served.child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(stderr.contains("request.id=\"plain-1\""), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no escape codes on a pipe: {stderr:?}"
    );

    let bad = common::chorus(&["serve", "--log-format", "yaml"], "");
    assert_eq!(common::code(&bad), 2);
    assert!(
        common::stderr(&bad).contains("`text` or `json`"),
        "{}",
        common::stderr(&bad)
    );
}
