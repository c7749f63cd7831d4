//! MCP tools end to end: `chorus run examples/mcp-orders.toml` with the fake model server
//! asking for the tools of a real MCP server (examples/mcp/orders_server.py on the official MCP
//! Python SDK, `mcp` from PyPI), over stdio and over streamable HTTP. The refund tool needs a
//! person's approval, given with `chorus confirm approve` while the flow waits.
//!
//! Needs `CHORUS_TEST_PYTHON` (a python with `mcp` installed, as `.ci/run` sets it); without
//! it the tests say "not run: …"; with it and no `mcp` package they fail.

mod common;
/// The fake OpenAI-compatible server of chorus-agent's tests (not every helper is used here).
#[allow(dead_code)]
#[path = "../../chorus-agent/tests/support/fake_openai.rs"]
mod fake_openai;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{chorus, code, repo, stderr, stdout};
use fake_openai::{FakeOpenAi, Reply};
use serde_json::Value;

/// The example flow, as the docs show it.
const EXAMPLE: &str = "examples/mcp-orders.toml";

/// The Python of `CHORUS_TEST_PYTHON` when it has the MCP SDK; `None` (after saying "not run")
/// when the variable is unset.
fn python() -> Option<PathBuf> {
    common::python_with(
        "the MCP server, on the MCP Python SDK",
        "mcp.server.mcpserver",
    )
}

/// `PATH` with the directory of `python` first, so the example's `python3` is that one.
fn path_with(python: &Path) -> std::ffi::OsString {
    let bin = python.parent().expect("python in a directory");
    let mut paths = vec![bin.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

/// The model's script: a lookup of an unknown order (a tool error), a lookup, a photo, a refund
/// (halted until approved), the message asking for approval, the answer after it.
fn script() -> Vec<Reply> {
    vec![
        Reply::call(
            "call_0",
            "orders__lookup_order",
            r#"{"order_id":"Z-9"}"#,
            (10, 5),
        ),
        Reply::call(
            "call_1",
            "orders__lookup_order",
            r#"{"order_id":"A-1001"}"#,
            (10, 5),
        ),
        Reply::call(
            "call_2",
            "orders__order_photo",
            r#"{"order_id":"A-1001"}"#,
            (10, 5),
        ),
        Reply::call(
            "call_3",
            "orders__refund_order",
            r#"{"order_id":"A-1001","reason":"parcel arrived damaged"}"#,
            (10, 5),
        ),
        Reply::answer("The refund of A-1001 awaits approval.", (10, 5)),
        Reply::answer("Order A-1001 is refunded: 129.00 EUR.", (10, 5)),
    ]
}

/// Runs `flow` with the fake model, approves the refund when the run waits for it, and checks
/// what the model was shown and that the refund ran once, after the approval.
async fn run_and_check(flow: &Path, python: &Path, refunds: &Path) {
    let fake = FakeOpenAi::start(script()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("approvals.db").display());
    let mut run = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["run", flow.to_str().unwrap(), "--confirmations", &store])
        .args(["--await-approval", "60"])
        .current_dir(repo())
        .env("CHORUS_MODEL_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("PATH", path_with(python))
        .env("ORDERS_REFUND_LOG", refunds)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr_pipe = run.stderr.take().unwrap();
    let refunds_owned = refunds.to_path_buf();
    let (refunded_early, approve, rest, out) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stderr_pipe).lines();
        let mut before = Vec::new();
        let hint = loop {
            match lines.next() {
                Some(Ok(line))
                    if line.starts_with("waiting for approval of orders__refund_order(") =>
                {
                    break line;
                }
                Some(Ok(line)) => before.push(line),
                _ => panic!("the flow ended without waiting for approval: {before:?}"),
            }
        };
        let refunded_early = refunds_owned.exists();
        let command = hint.split("approve with: ").nth(1).unwrap().to_owned();
        let words: Vec<&str> = command.split_whitespace().collect();
        let approve = chorus(&words[1..], "");
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        (
            refunded_early,
            approve,
            rest,
            run.wait_with_output().unwrap(),
        )
    })
    .await
    .unwrap();
    assert!(!refunded_early, "the refund ran before the approval");
    assert_eq!(code(&approve), 0, "{}", stderr(&approve));
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    assert!(
        stdout(&out).contains("customer: Order A-1001 is refunded: 129.00 EUR."),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        std::fs::read_to_string(refunds).unwrap(),
        "A-1001\tparcel arrived damaged\n",
        "the refund ran exactly once"
    );

    let requests = fake.requests();
    assert_eq!(requests.len(), 6);
    // The server's tools, namespaced, with the schemas it lists.
    let tools = requests[0].body["tools"].as_array().unwrap();
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "orders__lookup_order",
            "orders__order_photo",
            "orders__refund_order"
        ]
    );
    let refund = &tools[2]["function"];
    assert_eq!(
        refund["parameters"]["required"],
        serde_json::json!(["order_id", "reason"])
    );
    assert!(
        refund["description"]
            .as_str()
            .unwrap()
            .starts_with("Refunds an order in full.")
    );
    // isError: the server's message comes back as an error result the model can act on.
    let error = last_tool_message(&requests[1].body);
    assert!(error.contains("\"error_type\":\"McpToolError\""), "{error}");
    assert!(
        error.contains("no order Z-9; known orders: A-1001, A-1002"),
        "{error}"
    );
    // Text content as text.
    assert_eq!(
        last_tool_message(&requests[2].body),
        "Order A-1001: 2 x router R7, delivered, total 129.00 EUR"
    );
    // The image as an image part of the tool result: the PNG the server made, as a data URL.
    // Chat Completions takes no image in a tool message, so its codec moves it into a user
    // message right after the tool results.
    let messages = requests[3].body["messages"].as_array().unwrap();
    let photo = messages
        .iter()
        .position(|m| m["role"] == "tool" && m["tool_call_id"] == "call_2")
        .expect("the photo's tool message");
    let next = &messages[photo + 1];
    assert_eq!(next["role"], "user", "{next}");
    assert!(
        next.to_string()
            .contains("data:image/png;base64,iVBORw0KGgo"),
        "{next}"
    );
    // The refund first halted, and after the approval the model got its real result.
    assert!(last_tool_message(&requests[4].body).contains("human_confirmation_required"));
    let after = requests[5].body.to_string();
    assert!(
        after.contains("Refunded order A-1001: 129.00 EUR (parcel arrived damaged)"),
        "{after}"
    );
}

/// The text of the last `tool` message of a Chat Completions request body.
fn last_tool_message(body: &Value) -> String {
    let message = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool message in {body}"));
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        other => panic!("tool content {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_agent_uses_a_stdio_mcp_servers_tools_and_a_confirmed_one_runs_once_after_approval()
{
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let refunds = dir.path().join("refunds.tsv");
    run_and_check(&repo().join(EXAMPLE), &python, &refunds).await;
}

/// The Python server on streamable HTTP on a free port of 127.0.0.1, killed when dropped.
struct HttpServer(Child);

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_agent_uses_a_streamable_http_mcp_servers_tools_the_same_way() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let refunds = dir.path().join("refunds.tsv");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = HttpServer(
        Command::new(&python)
            .args(["examples/mcp/orders_server.py", "--http", "--port"])
            .arg(port.to_string())
            .current_dir(repo())
            .env("ORDERS_REFUND_LOG", &refunds)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            server.0.try_wait().unwrap().is_none(),
            "the MCP server exited"
        );
        assert!(
            Instant::now() < deadline,
            "the MCP server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let example = std::fs::read_to_string(repo().join(EXAMPLE)).unwrap();
    let stdio = "command = \"python3\"              # a stdio server, started without a shell …\nargs = [\"examples/mcp/orders_server.py\"]\ninherit_env = [\"ORDERS_REFUND_LOG\"]   # of chorus's environment, only this (and PATH, HOME, …)\n";
    assert!(
        example.contains(stdio),
        "the example changed; update this test"
    );
    let flow = dir.path().join("flow.toml");
    std::fs::write(
        &flow,
        example.replace(stdio, &format!("url = \"http://127.0.0.1:{port}/mcp\"\n")),
    )
    .unwrap();
    run_and_check(&flow, &python, &refunds).await;
}

#[test]
fn the_docs_show_the_example_as_it_is() {
    let docs = std::fs::read_to_string(repo().join("docs/interop.md")).unwrap();
    let example = std::fs::read_to_string(repo().join(EXAMPLE)).unwrap();
    assert!(
        docs.contains(&example),
        "docs/interop.md must show {EXAMPLE} verbatim"
    );
}

#[test]
fn an_unreachable_mcp_server_fails_the_flow_file_with_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("flow.toml");
    std::fs::write(
        &flow,
        "name = \"x\"\n[input]\ntext = \"hi\"\n[[tools]]\nname = \"orders\"\nkind = \"mcp\"\n\
         command = \"/nonexistent/mcp-server\"\n[[agents]]\nname = \"a\"\nkind = \"rule\"\n\
         [[agents.rules]]\n",
    )
    .unwrap();
    let out = chorus(&["run", flow.to_str().unwrap()], "");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("tools[0]: tool `orders`: `/nonexistent/mcp-server` could not be started"),
        "{err}"
    );
}

#[test]
fn a_confirm_name_the_server_does_not_list_is_refused_with_the_ones_it_lists() {
    let Some(python) = python() else { return };
    let example = std::fs::read_to_string(repo().join(EXAMPLE)).unwrap();
    let confirm = "confirm = [\"refund_order\"]";
    assert!(
        example.contains(confirm),
        "the example changed; update this test"
    );
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("flow.toml");
    std::fs::write(&flow, example.replace(confirm, "confirm = [\"refund\"]")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["run", flow.to_str().unwrap()])
        .current_dir(repo())
        .env("PATH", path_with(&python))
        .env("CHORUS_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 2, "{err}");
    assert!(
        err.contains(
            "tools[0]: tool `orders`: `confirm` names \"refund\", which the server does not \
             list; it lists: lookup_order, order_photo, refund_order"
        ),
        "{err}"
    );
}
