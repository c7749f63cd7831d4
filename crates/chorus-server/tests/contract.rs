//! The HTTP contract as outside tools read it: `/openapi.json` of a running server passes
//! `openapi-spec-validator`, and a Python client generated from it by `openapi-python-client`
//! publishes, reads the inbox, extends a lease, nacks and acks against the server.
//!
//! The tools come from the Python in CHORUS_TEST_PYTHON (a virtual environment made by `.ci/run`
//! from `.ci/python-oracles.txt`); with the variable set, a tool that cannot run fails the test,
//! without it the test says it was not run.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// The oracle Python, or `None` after saying why the test does not run.
fn python() -> Option<PathBuf> {
    match std::env::var_os("CHORUS_TEST_PYTHON") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "\n*** the OpenAPI contract test was NOT run: CHORUS_TEST_PYTHON is not set (see .ci/run) ***\n"
            );
            None
        }
    }
}

/// Runs `command` to the end off the async runtime; fails the test when it cannot start.
async fn run(mut command: Command) -> Output {
    let shown = format!("{command:?}");
    tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("the process thread")
        .unwrap_or_else(|e| panic!("{shown} could not start: {e}"))
}

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_is_valid_and_a_generated_client_walks_the_api() {
    let Some(py) = python() else {
        return;
    };
    let (_dir, server) = fresh(30).await;
    let work = tempfile::tempdir().unwrap();
    let spec = work.path().join("openapi.json");
    let document = client()
        .get(server.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    std::fs::write(&spec, &document).unwrap();

    let mut validate = Command::new(&py);
    validate.args(["-m", "openapi_spec_validator"]).arg(&spec);
    let out = run(validate).await;
    assert!(
        out.status.success(),
        "openapi-spec-validator: {}",
        text(&out)
    );

    let generator = py.with_file_name("openapi-python-client");
    let mut generate = Command::new(if generator.exists() {
        generator
    } else {
        PathBuf::from("openapi-python-client")
    });
    generate
        .args(["generate", "--meta", "none", "--overwrite", "--path"])
        .arg(&spec)
        .arg("--output-path")
        .arg(work.path().join("client"));
    let out = run(generate).await;
    assert!(
        out.status.success(),
        "openapi-python-client: {}",
        text(&out)
    );
    // Every operation made it into the client: a skipped one is only a warning there.
    let operations: serde_json::Value = serde_json::from_slice(&document).unwrap();
    let mut missing = Vec::new();
    for (path, methods) in operations["paths"].as_object().unwrap() {
        for (method, operation) in methods.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap_or_default();
            let tag = operation["tags"][0].as_str().unwrap_or("default");
            let module = work
                .path()
                .join("client/api")
                .join(tag)
                .join(format!("{}.py", python_name(id)));
            // /metrics answers OpenMetrics text, which generated clients do not parse.
            if !module.exists() && path != "/metrics" {
                missing.push(format!("{method} {path} ({})", module.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not generated: {missing:?}\n{}",
        text(&out)
    );

    let walk = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/generated_client_walk.py");
    let mut client = Command::new(&py);
    client
        .arg(walk)
        .args([server.base.as_str(), ALICE, BOB])
        .env("PYTHONPATH", work.path());
    let out = run(client).await;
    assert!(
        out.status.success(),
        "the generated client's walk: {}",
        text(&out)
    );
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    server.stop().await;
}

/// The module name openapi-python-client gives an operation id (`list` becomes `list_`).
fn python_name(operation_id: &str) -> String {
    let mut name = String::new();
    for (i, c) in operation_id.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(c.to_ascii_lowercase());
    }
    if name == "list" {
        name.push('_');
    }
    name
}
