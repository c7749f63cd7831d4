//! `chorus serve` as an MCP server (`/mcp`, feature `mcp`), driven by the official MCP Python SDK
//! (`mcp` from PyPI, in the Python of CHORUS_TEST_PYTHON): an assistant publishes as its agent
//! through the API's checks, looks at an inbox it may read without consuming it, and reads a
//! task. Without CHORUS_TEST_PYTHON it prints that it was not run; with it, a Python that cannot
//! run the SDK fails the test.
#![cfg(feature = "mcp")]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use common::{ALICE, BOB, SseReader, fresh};
use serde_json::Value;

fn python() -> Option<PathBuf> {
    match std::env::var_os("CHORUS_TEST_PYTHON") {
        Some(python) => Some(PathBuf::from(python)),
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "\n*** the MCP server test was NOT run: CHORUS_TEST_PYTHON is not set (see .ci/run) ***\n"
            );
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_assistant_publishes_as_its_agent_looks_at_an_inbox_and_reads_a_task() {
    let Some(python) = python() else { return };
    let (_dir, server) = fresh(30).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_client.py");
    let url = server.url("/mcp");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .args([url.as_str(), ALICE, BOB, "task-mcp-1"])
            .output()
            .expect("CHORUS_TEST_PYTHON runs")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the MCP SDK client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_str(stdout.trim()).expect("one JSON object");

    assert_eq!(
        seen["tools"],
        serde_json::json!(["publish", "read_inbox", "read_task"])
    );
    assert_eq!(seen["schemas"]["publish"]["required"][0], "document");
    // Published as alice, through the API's checks.
    assert_eq!(seen["published"]["is_error"], false, "{seen}");
    assert_eq!(seen["published"]["structured"]["status"], 201, "{seen}");
    assert_eq!(
        seen["published"]["structured"]["receipt"]["queues"][0],
        "bob"
    );
    // Sending as another agent, or an invalid document: refused with why, nothing stored.
    assert_eq!(seen["spoofed"]["is_error"], true, "{seen}");
    assert_eq!(seen["spoofed"]["structured"]["status"], 403, "{seen}");
    assert_eq!(seen["invalid"]["is_error"], true, "{seen}");
    assert_eq!(seen["invalid"]["structured"]["status"], 422, "{seen}");
    assert_eq!(
        seen["invalid"]["structured"]["refusal"]["issues"][0]["pointer"], "/content",
        "{seen}"
    );
    // Another agent's inbox is not alice's to look at; bob sees his message, untaken.
    assert_eq!(seen["other_inbox"]["structured"]["status"], 403, "{seen}");
    let inbox = &seen["bob_inbox"]["structured"];
    assert_eq!(inbox["depth"], 1, "only the accepted message waits: {seen}");
    assert_eq!(inbox["messages"][0]["attempts"], 0, "looking took nothing");
    assert_eq!(
        inbox["messages"][0]["message"]["content"], "Здравствуйте — 你好 👋",
        "{seen}"
    );
    assert_eq!(seen["bad_limit"]["is_error"], true, "{seen}");
    // The task, as its sender may read it.
    assert_eq!(seen["task"]["is_error"], false, "{seen}");
    assert_eq!(seen["task"]["structured"]["id"], "task-mcp-1");
    assert_eq!(
        seen["task"]["structured"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    // No token, no MCP.
    assert_eq!(seen["anonymous_status"], 401, "{seen}");

    // What the assistant published reaches bob's stream, first delivery.
    let mut stream = SseReader::open(&server, "bob", BOB, None).await;
    let (id, attempt) = common::delivered(&stream.next().await);
    assert_eq!((id.as_str(), attempt), ("mcp-m-1", 1));
    server.stop().await;
}
