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

/// MCP's DNS-rebinding protection: a request whose `Origin` is neither the hub's own nor listed
/// in `[cors]` is refused 403 before anything else; and `logging/setLevel` is accepted (the
/// two server scenarios of the MCP conformance suite that failed).
#[tokio::test]
async fn a_foreign_origin_is_refused_and_set_level_is_accepted() {
    let (_dir, server) = fresh(30).await;
    let http = reqwest::Client::new();
    let rpc = |method: &str, params: Value| serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let initialize = rpc(
        "initialize",
        serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let post = |origin: Option<String>, body: Value| {
        let mut request = http
            .post(server.url("/mcp"))
            .bearer_auth(ALICE)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let foreign = post(Some("http://evil.example".into()), initialize.clone())
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    let refusal: Value = foreign.json().await.unwrap();
    assert_eq!(refusal["error"], "origin_not_allowed", "{refusal}");
    let host = server.url("").trim_end_matches('/').to_owned();
    let own = post(Some(host), initialize.clone()).await.unwrap();
    assert_eq!(own.status(), 200, "the hub's own origin");
    let none = post(None, initialize).await.unwrap();
    assert_eq!(none.status(), 200, "no Origin: not a browser");
    let info: Value = none.json().await.unwrap();
    assert!(
        info["result"]["capabilities"]["logging"].is_object(),
        "{info}"
    );
    let level = post(
        None,
        rpc("logging/setLevel", serde_json::json!({"level": "debug"})),
    )
    .await
    .unwrap();
    assert_eq!(level.status(), 200);
    let answer: Value = level.json().await.unwrap();
    assert_eq!(answer["result"], serde_json::json!({}), "{answer}");
}
