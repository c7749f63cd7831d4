//! Schemathesis (PyPI) against a running server for a bounded time: generated requests for
//! every documented operation, with valid and invalid data; no answer may be a 5xx, and every
//! answer must match the document (status code, content type, headers, body schema, SSE events).
//!
//! Schemathesis comes from the Python in CHORUS_TEST_PYTHON (the virtual environment `.ci/run`
//! makes from `.ci/python-oracles.txt`); with the variable set, a Schemathesis that cannot run
//! fails the test; without it the test says it was not run. `CHORUS_SCHEMATHESIS_SECONDS` sets
//! the time budget (default 60); the seed is drawn anew each run and printed.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use common::*;

/// Says, past the harness's output capture, that this was not run and why.
fn not_run(why: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "\n*** the Schemathesis run was NOT done: {why} ***\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_server_error_and_no_answer_outside_the_document() {
    let Some(python) = std::env::var_os("CHORUS_TEST_PYTHON").map(PathBuf::from) else {
        return not_run("CHORUS_TEST_PYTHON is not set (see .ci/run)");
    };
    let tool = python.with_file_name("schemathesis");
    assert!(
        tool.exists(),
        "{} is missing: CHORUS_TEST_PYTHON's environment must have schemathesis (.ci/python-oracles.txt)",
        tool.display()
    );
    let mut config = config(30);
    config.rate_per_sec = 0.0;
    config.settle_rate_per_sec = 0.0;
    config.accept_unknown_recipients = true;
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(&db(dir.path()), &config).await;
    // A few messages and a dead letter, so that reads find something.
    for i in 0..3 {
        let m = message(&format!("seed-{i}"), "alice", "bob", "hello");
        assert_eq!(publish(&server, ALICE, &m).await.status(), 201);
    }

    // The admin token for every operation but those only an agent may call; the inbox stream
    // never ends, so it is left to the HTTP tests.
    let settings = format!(
        r#"
headers = {{ Authorization = "Bearer {ADMIN}" }}
request-timeout = 5.0

[[operations]]
include-path = "/v1/messages"
headers = {{ Authorization = "Bearer {ALICE}" }}

[[operations]]
include-path-regex = "^/v1/agents/"
headers = {{ Authorization = "Bearer {BOB}" }}

[[operations]]
include-path = "/v1/confirmations"
include-method = "POST"
headers = {{ Authorization = "Bearer {ALICE}" }}
"#
    );
    let file = dir.path().join("schemathesis.toml");
    std::fs::write(&file, settings).unwrap();
    let seconds = std::env::var("CHORUS_SCHEMATHESIS_SECONDS").unwrap_or_else(|_| "60".into());
    let mut run = Command::new(&tool);
    run.arg("--config-file")
        .arg(&file)
        .arg("--no-color")
        .arg("run")
        .arg(server.url("/openapi.json"))
        .args(["--max-time", &seconds])
        .args(["--exclude-path-regex", r"^/v1/agents/\{agent\}/inbox$"])
        .args([
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,\
             response_headers_conformance,response_schema_conformance",
        ])
        .args(["--workers", "2"])
        .current_dir(dir.path());
    let shown = format!("{run:?}");
    let out = tokio::task::spawn_blocking(move || run.output())
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{shown} could not start: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: String = stdout
        .lines()
        .skip_while(|l| !l.contains("SUMMARY"))
        .collect::<Vec<_>>()
        .join("\n");
    let _ = writeln!(std::io::stderr(), "{summary}");
    assert!(
        out.status.success(),
        "schemathesis found problems (exit {:?}):\n{stdout}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    server.stop().await;
}
