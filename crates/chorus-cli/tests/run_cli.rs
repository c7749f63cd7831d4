//! `chorus run`: the support-desk example end to end, and exit codes for bad flow files.

mod common;

/// The fake OpenAI-compatible server of chorus-agent's tests (not every helper is used here).
#[allow(dead_code)]
#[path = "../../chorus-agent/tests/support/fake_openai.rs"]
mod fake_openai;

/// The support-desk chain of chorus-agent's flow tests.
#[path = "../../chorus-agent/tests/support/desk.rs"]
mod desk;

use chorus_core::{Kind, Validator};
use common::{Served, chorus, code, stderr, stdout};
use desk::{SUPPORT_DESK_CHAIN, assert_coherent_story, handoff_chain};
use serde_json::Value;

#[test]
fn support_desk_transcript_holds_the_escalation_chain_with_valid_packets() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let out = chorus(
        &[
            "run",
            "examples/support-desk.toml",
            "--transcript",
            transcript.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Root cause"), "{}", stdout(&out));
    let text = std::fs::read_to_string(&transcript).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines[0]["role"], "user",
        "the first line is the customer's message"
    );
    for line in &lines {
        let report = Validator::standard().validate_value(line, None);
        assert!(report.is_valid(), "{line}: {:?}", report.problems);
        if line.pointer("/payload/handoff_type").is_some() {
            let handoff = Validator::standard().validate_value(line, Some(Kind::Handoff));
            assert!(handoff.is_valid(), "{line}: {:?}", handoff.problems);
        }
    }
    assert_eq!(handoff_chain(&lines), SUPPORT_DESK_CHAIN);
    let l3 = lines
        .iter()
        .find(|l| l["metadata"]["recipient_id"] == "level3_expert")
        .unwrap();
    assert_eq!(
        l3["payload"]["data"]["technical_details"]["log_references"][0], "log_file_id_123",
        "information provided on request travels on to level 3"
    );
    let last = lines.last().unwrap();
    assert_eq!(last["recipient"], "customer_john");
    assert_coherent_story(&lines);
}

#[test]
fn format_json_prints_the_run_as_one_object() {
    for flag in [&["--format", "json"][..], &["--json"][..]] {
        let out = chorus(
            &[&["run", "examples/support-desk.toml"][..], flag].concat(),
            "",
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let report: Value =
            serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)));
        assert!(report["task_id"].as_str().unwrap().starts_with("task-"));
        assert_eq!(report["steps"], 8);
        let outputs = report["outputs"].as_array().unwrap();
        assert_eq!(outputs.len(), 3, "{report}");
        assert_eq!(outputs[2]["recipient"], "customer_john");
        assert!(
            outputs[2]["content"]
                .as_str()
                .unwrap()
                .contains("Root cause")
        );
        assert_eq!(report["pending_confirmations"], serde_json::json!([]));
        assert_eq!(report["usage"]["calls"], 0);
        assert!(!stderr(&out).contains("flow ended"), "{}", stderr(&out));
    }
}

#[test]
fn a_bad_flow_file_exits_2_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("bad.toml");
    std::fs::write(
        &flow,
        "name = \"x\"\n[input]\ntext = \"hi\"\n\n[[agents]]\nname = \"a\"\nkind = \"robot\"\n",
    )
    .unwrap();
    let out = chorus(&["run", flow.to_str().unwrap()], "");
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("line 7"), "{}", stderr(&out));
    std::fs::write(
        &flow,
        "name = \"x\"\n[input]\ntext = \"hi\"\n[[agents]]\nname = \"a\"\nkind = \"rule\"\ntools = [\"nope\"]\n[[agents.rules]]\n",
    )
    .unwrap();
    let out = chorus(&["run", flow.to_str().unwrap()], "");
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("agents[0].tools[0]"),
        "{}",
        stderr(&out)
    );
    let out = chorus(&["run", "examples/does-not-exist.toml"], "");
    assert_eq!(code(&out), 2);
}

#[test]
fn a_flow_that_sends_an_invalid_packet_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let flow = dir.path().join("invalid.toml");
    std::fs::write(
        &flow,
        r#"name = "invalid"
[input]
text = "hello"
[[agents]]
name = "a"
kind = "rule"
[[agents.rules]]
[[agents.rules.then]]
action = "handoff"
to = "b"
handoff_type = "ESCALATION"
data = { issue_category = "X", severity = "urgent" }
"#,
    )
    .unwrap();
    let out = chorus(&["run", flow.to_str().unwrap()], "");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("/payload/data"), "{}", stderr(&out));
}

#[test]
fn support_desk_runs_against_a_chorus_server() {
    let dir = tempfile::tempdir().unwrap();
    let senders = [
        "customer_service",
        "technical_support",
        "level3_expert",
        "customer_john",
    ];
    let admin_hash = stdout(&chorus(&["serve", "--hash-token", ADMIN], ""));
    let mut config = format!("admin_token_sha256 = \"{}\"\n", admin_hash.trim());
    let mut tokens = String::from("\n[server]\nidle_ms = 1500\n[server.tokens]\n");
    for (i, name) in senders.iter().enumerate() {
        let token = format!("token-{i}-0123456789abcdef0123456789abcdef");
        let hash = stdout(&chorus(&["serve", "--hash-token", &token], ""));
        config.push_str(&format!(
            "[agents.\"{name}\"]\ntoken_sha256 = \"{}\"\n",
            hash.trim()
        ));
        tokens.push_str(&format!("\"{name}\" = \"{token}\"\n"));
    }
    std::fs::write(dir.path().join("chorus.toml"), config).unwrap();
    let example =
        std::fs::read_to_string(common::repo().join("examples/support-desk.toml")).unwrap();
    let flow = dir.path().join("flow.toml");
    std::fs::write(&flow, example + &tokens).unwrap();

    let server = serve(dir.path());
    let addr = server.addr.clone();

    let transcript = dir.path().join("t.jsonl");
    let out = chorus(
        &[
            "run",
            flow.to_str().unwrap(),
            "--server",
            &format!("http://{addr}"),
            "--transcript",
            transcript.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Root cause"), "{}", stdout(&out));
    let lines: Vec<Value> = std::fs::read_to_string(&transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(handoff_chain(&lines), SUPPORT_DESK_CHAIN);
    assert_coherent_story(&lines);

    // The server files the customer's messages and the replies under the task, beside the
    // handoffs: the task's timeline holds the whole transcript.
    let task = lines[2]["metadata"]["task_id"].as_str().unwrap().to_owned();
    let (status, body) = http(
        &addr,
        "GET",
        &format!("/v1/tasks/{task}/messages?limit=100"),
        ADMIN,
    );
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    let mut filed: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    let mut sent: Vec<&str> = lines
        .iter()
        .map(|d| {
            d["id"]
                .as_str()
                .or(d["metadata"]["message_id"].as_str())
                .unwrap()
        })
        .collect();
    filed.sort_unstable();
    sent.sort_unstable();
    assert_eq!(filed, sent, "the task's timeline is the transcript");
    drop(server);
}

/// Starts `chorus serve` (memory store, `chorus.toml` of `dir`) on a free port of 127.0.0.1.
fn serve(dir: &std::path::Path) -> Served {
    let mut served = Served::start(
        dir,
        &["--store", "memory", "--config", "chorus.toml"],
        std::process::Stdio::null(),
    );
    served.keep_reading();
    served
}

/// One HTTP/1.1 request to `addr` without a body; returns the status code and the body.
fn http(addr: &str, method: &str, path: &str, token: &str) -> (u16, String) {
    common::request(addr, method, path, token, None)
}

/// The admin token and the tokens of agents `ops` and `operator` in [`server_config`].
const ADMIN: &str = "admin-0123456789abcdef0123456789abcdef";
const OPS: &str = "ops-0123456789abcdef0123456789abcdef";
const OPERATOR: &str = "operator-0123456789abcdef0123456789";

/// Writes `chorus.toml` in `dir`: the admin token [`ADMIN`], agents `ops` and `operator`.
fn server_config(dir: &std::path::Path) {
    let hash = |token: &str| {
        stdout(&chorus(&["serve", "--hash-token", token], ""))
            .trim()
            .to_owned()
    };
    std::fs::write(
        dir.join("chorus.toml"),
        format!(
            "admin_token_sha256 = \"{}\"\n[agents.ops]\ntoken_sha256 = \"{}\"\n[agents.operator]\ntoken_sha256 = \"{}\"\n",
            hash(ADMIN), hash(OPS), hash(OPERATOR)
        ),
    )
    .unwrap();
}

/// The `[server]` table of a flow run against a server of [`server_config`].
fn server_table() -> String {
    format!(
        "[server]\nidle_ms = 800\n[server.tokens]\nops = \"{OPS}\"\noperator = \"{OPERATOR}\"\n"
    )
}

#[test]
fn a_confirmed_tool_waits_on_the_server_and_runs_once_after_approval() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path());
    let log = dir.path().join("log");
    let flow = confirmed_flow(
        dir.path(),
        &log,
        "task_id = \"task-approval-1\"\n",
        &server_table(),
    );
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let url = format!("http://{addr}");
    let run = || chorus(&["run", flow.to_str().unwrap(), "--server", &url], "");

    let halted = run();
    let (status, pending) = http(&addr, "GET", "/v1/confirmations?state=pending", ADMIN);
    let approved_id = serde_json::from_str::<Value>(&pending)
        .ok()
        .and_then(|v| v["items"][0]["id"].as_str().map(str::to_owned));
    let approve = approved_id.as_ref().map(|id| {
        http(
            &addr,
            "POST",
            &format!("/v1/confirmations/{id}/approve"),
            ADMIN,
        )
        .0
    });
    let ran = run();
    let again = run();
    drop(server);

    assert_eq!(code(&halted), 1, "{}", stderr(&halted));
    assert!(
        stderr(&halted).contains("human_confirmation_required"),
        "{}",
        stderr(&halted)
    );
    assert_eq!(status, 200, "{pending}");
    let pending: Value = serde_json::from_str(&pending).unwrap();
    let pending = &pending["items"];
    assert_eq!(pending.as_array().unwrap().len(), 1, "{pending}");
    assert_eq!(pending[0]["agent"], "ops");
    assert_eq!(pending[0]["arguments"], r#"{"host":"router-1"}"#);
    assert_eq!(approve, Some(200));
    assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    assert_eq!(stdout(&ran).trim(), "operator: restarted router-1");
    assert_eq!(
        code(&again),
        1,
        "an approval runs the call once: {}",
        stderr(&again)
    );
    assert!(
        stderr(&again).contains("ConfirmationAlreadyUsed"),
        "{}",
        stderr(&again)
    );
}

/// A rule agent whose tool needs confirmation, appending the host to `log` when it runs.
/// `top` goes among the top-level keys (e.g. a `task_id` line), `server` is appended (a
/// `[server]` table for --server runs).
fn confirmed_flow(
    dir: &std::path::Path,
    log: &std::path::Path,
    top: &str,
    server: &str,
) -> std::path::PathBuf {
    let flow = dir.join("flow.toml");
    std::fs::write(
        &flow,
        format!(
            r#"name = "approval"
{top}[input]
from = "operator"
to = "ops"
text = "restart the router"
[[tools]]
name = "restart"
kind = "command"
program = "sh"
args = ["-c", "printf 'restarted {{host}}'; echo {{host}} >> {log}"]
requires_confirmation = true
parameters = {{ type = "object", properties = {{ host = {{ type = "string" }} }}, required = ["host"] }}
[[agents]]
name = "ops"
kind = "rule"
tools = ["restart"]
[[agents.rules]]
[[agents.rules.then]]
action = "tool"
tool = "restart"
arguments = {{ host = "router-1" }}
[[agents.rules.then]]
action = "reply"
text = "${{tools.restart.output}}"
{server}"#,
            log = log.display()
        ),
    )
    .unwrap();
    flow
}

#[test]
fn an_embedded_flow_waits_for_an_approval_given_with_chorus_confirm_and_runs_the_call_once() {
    use std::io::{BufRead, BufReader};

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let flow = confirmed_flow(dir.path(), &log, "", "");
    let store = format!("sqlite:{}", dir.path().join("approvals.db").display());
    let mut run = awaiting(&flow, &["--confirmations", &store]);
    let mut stderr_lines = BufReader::new(run.stderr.take().unwrap()).lines();
    let (hint, before) = waiting_line(&mut stderr_lines, "restart");
    assert!(
        before.iter().any(|l| l.contains(
            &*dir
                .path()
                .join("approvals-confirmations.db")
                .to_string_lossy()
        )),
        "says where confirmations are kept: {before:?}"
    );
    assert!(!log.exists(), "nothing ran before the approval");
    let command = hint.split("approve with: ").nth(1).unwrap();
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(&words[..3], ["chorus", "confirm", "approve"], "{hint}");
    let approve = chorus(&words[1..], "");
    let rest: Vec<String> = stderr_lines.map_while(Result::ok).collect();
    let out = run.wait_with_output().unwrap();
    assert_eq!(code(&approve), 0, "{}", stderr(&approve));
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    assert_eq!(stdout(&out).trim(), "operator: restarted router-1");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "router-1\n");
}

#[test]
fn without_waiting_an_embedded_flow_keeps_the_pending_call_in_chorus_confirmations_db() {
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let flow = confirmed_flow(dir.path(), &log, "", "");
    let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["run", flow.to_str().unwrap()])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(code(&out), 1, "{err}");
    assert!(err.contains("chorus-confirmations.db"), "{err}");
    assert!(err.contains("human_confirmation_required"), "{err}");
    assert!(dir.path().join("chorus-confirmations.db").is_file());
    assert!(!log.exists());
}

/// Reads standard error lines of a waiting `chorus run` up to its line "waiting for approval of
/// TOOL(…"; returns that line and the ones before it.
/// Starts `chorus run FLOW ARGS --await-approval 30`, its output and error piped.
fn awaiting(flow: &std::path::Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["run", flow.to_str().unwrap()])
        .args(args)
        .args(["--await-approval", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The confirmation id in a "waiting for approval of …" line.
fn confirmation_id(hint: &str) -> String {
    hint.split(" — id ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("no confirmation id in {hint:?}"))
        .to_owned()
}

fn waiting_line(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    tool: &str,
) -> (String, Vec<String>) {
    let mut before = Vec::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            panic!("the flow ended without waiting: {before:?}");
        };
        if line.starts_with(&format!("waiting for approval of {tool}(")) {
            return (line, before);
        }
        before.push(line);
    }
}

#[test]
fn a_flow_against_a_server_waits_for_an_approval_given_there_and_runs_the_call_once() {
    use std::io::{BufRead, BufReader};

    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path());
    let log = dir.path().join("log");
    let flow = confirmed_flow(dir.path(), &log, "", &server_table());
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let url = format!("http://{addr}");
    let mut run = awaiting(&flow, &["--server", &url]);
    let mut stderr_lines = BufReader::new(run.stderr.take().unwrap()).lines();
    let (hint, _) = waiting_line(&mut stderr_lines, "restart");
    let ran_early = log.exists();
    let id = confirmation_id(&hint);
    let (status, body) = http(
        &addr,
        "POST",
        &format!("/v1/confirmations/{id}/approve"),
        ADMIN,
    );
    let rest: Vec<String> = stderr_lines.map_while(Result::ok).collect();
    let out = run.wait_with_output().unwrap();
    drop(server);
    assert!(!ran_early, "nothing ran before the approval");
    assert!(hint.contains(&format!("--server {url}")), "{hint}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    assert_eq!(stdout(&out).trim(), "operator: restarted router-1");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "router-1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_example_waits_for_chorus_confirm_and_the_model_gets_the_real_result() {
    use fake_openai::{FakeOpenAi, Reply, chat};
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let text = |t: &str| Reply::chat(vec![chat::role(), chat::text(t), chat::finish("stop")]);
    let args = r#"{"host":"10.0.0.1","reason":"hourly drops"}"#;
    let fake = FakeOpenAi::start(vec![
        Reply::chat(vec![
            chat::role(),
            chat::call_start(0, "call_r", "restart_router", args),
            chat::finish("tool_calls"),
        ]),
        text("I need your approval to restart 10.0.0.1."),
        text("Router 10.0.0.1 restarted."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("approvals.db").display());
    let mut run = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args([
            "run",
            "examples/tools-with-approval.toml",
            "--confirmations",
            &store,
        ])
        .args(["--await-approval", "30"])
        .current_dir(common::repo())
        .env("CHORUS_MODEL_BASE_URL", fake.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr_pipe = run.stderr.take().unwrap();
    let (approve, rest, out) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stderr_pipe).lines();
        let (hint, _) = waiting_line(&mut lines, "restart_router");
        let command = hint.split("approve with: ").nth(1).unwrap().to_owned();
        let words: Vec<&str> = command.split_whitespace().collect();
        let approve = chorus(&words[1..], "");
        let rest: Vec<String> = lines.map_while(Result::ok).collect();
        (approve, rest, run.wait_with_output().unwrap())
    })
    .await
    .unwrap();
    assert_eq!(code(&approve), 0, "{}", stderr(&approve));
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    assert!(
        stdout(&out).contains("operator: Router 10.0.0.1 restarted."),
        "{}",
        stdout(&out)
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    // The one LLM agent made every model call: its line comes before the flow total.
    let agent_line = rest
        .iter()
        .position(|l| l.starts_with("agent network_assistant: 3 model calls, "));
    let total_line = rest.iter().position(|l| l.starts_with("model calls: 3,"));
    assert!(
        matches!((agent_line, total_line), (Some(a), Some(t)) if a < t),
        "{rest:?}"
    );
    let results: Vec<&Value> = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m.to_string()
                .contains("restart requested for 10.0.0.1: hourly drops")
        })
        .collect();
    assert_eq!(
        results.len(),
        1,
        "the call ran once: {:?}",
        requests[2].body
    );
    assert_eq!(results[0]["role"], "tool");
    let list = chorus(
        &[
            "confirm", "list", "--state", "consumed", "--store", &store, "--json",
        ],
        "",
    );
    assert_eq!(stdout(&list).lines().count(), 1, "{}", stdout(&list));
}

#[test]
fn a_stored_run_whose_agent_fails_keeps_the_delivery_as_a_dead_letter_and_resumes_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let flow = dir.path().join("failing.toml");
    std::fs::write(
        &flow,
        format!(
            r#"name = "failing"
task_id = "task-fail"
[input]
to = "a"
text = "hello"
[[tools]]
name = "broken"
kind = "command"
program = "sh"
args = ["-c", "echo run >> {runs}; exit 3"]
[[agents]]
name = "a"
kind = "rule"
[[agents.rules]]
[[agents.rules.then]]
action = "tool"
tool = "broken"
arguments = {{}}
"#,
            runs = runs.display()
        ),
    )
    .unwrap();
    let store = dir.path().join("run.db");
    let args = [
        "run",
        flow.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ];
    let first = chorus(&args, "");
    assert_eq!(code(&first), 1, "{}", stderr(&first));
    assert!(stderr(&first).contains("broken"), "{}", stderr(&first));
    let ran = || {
        std::fs::read_to_string(&runs)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(ran(), 1);
    // Resumed: the failed delivery is a dead letter, not held, so nothing runs it again and
    // the run does not wait for its lease.
    let started = std::time::Instant::now();
    let resumed = chorus(&[&args[..], &["--resume"]].concat(), "");
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    assert_eq!(ran(), 1, "the failed delivery was not handled again");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let bus = chorus_bus::SqliteBus::open(&store, chorus_bus::BusConfig::default()).unwrap();
    let dead = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(chorus_bus::Backend::dead_letters_page(&bus, None, 10))
        .unwrap();
    assert_eq!(dead.items.len(), 1, "{dead:?}");
    assert_eq!(dead.items[0].reason.kind(), "failed");
}

#[test]
fn a_flow_against_a_server_keeps_its_lease_through_an_approval_longer_than_the_ack_wait() {
    use std::io::{BufRead, BufReader};

    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path());
    // An ack wait of 1 s and two deliveries at most: without lease extensions the wait below
    // would dead-letter the delivery the flow is still handling.
    let config = dir.path().join("chorus.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("ack_wait_secs = 1\nmax_deliver = 2\n{text}"),
    )
    .unwrap();
    let log = dir.path().join("log");
    let table = server_table().replace("idle_ms = 800\n", "idle_ms = 800\nrenew_ms = 300\n");
    let flow = confirmed_flow(dir.path(), &log, "", &table);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let url = format!("http://{addr}");
    let mut run = awaiting(&flow, &["--server", &url]);
    let mut stderr_lines = BufReader::new(run.stderr.take().unwrap()).lines();
    let (hint, _) = waiting_line(&mut stderr_lines, "restart");
    let id = confirmation_id(&hint);
    // Three ack waits pass while the person decides.
    std::thread::sleep(std::time::Duration::from_secs(3));
    let path = format!("/v1/confirmations/{id}/approve");
    let (status, body) = http(&addr, "POST", &path, ADMIN);
    assert_eq!(status, 200, "{body}");
    let rest: Vec<String> = stderr_lines.map_while(Result::ok).collect();
    let out = run.wait_with_output().unwrap();
    let (status, dead) = http(&addr, "GET", "/v1/dead-letters", ADMIN);
    drop(server);
    assert_eq!(out.status.code(), Some(0), "{rest:?}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "router-1\n");
    assert_eq!(status, 200, "{dead}");
    let dead: Value = serde_json::from_str(&dead).unwrap();
    assert_eq!(dead["total"], 0, "nothing was dead-lettered: {dead}");
}

#[test]
fn a_stored_run_halted_on_a_confirmation_resumes_after_the_approval_and_runs_the_call_once() {
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log");
    let flow = confirmed_flow(dir.path(), &log, "task_id = \"task-halt\"\n", "");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_chorus"))
            .args(["run", flow.to_str().unwrap(), "--store", "run.db"])
            .args(extra)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let halted = run(&[]);
    assert_eq!(code(&halted), 1, "{}", stderr(&halted));
    assert!(!log.exists(), "nothing ran before the approval");
    let confirm = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_chorus"))
            .arg("confirm")
            .args(args)
            .args(["--store", "sqlite:chorus.db"])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let listed = confirm(&["list", "--json"]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let first = stdout(&listed)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    let listed: Value = serde_json::from_str(&first).unwrap();
    let id = listed["id"].as_str().unwrap().to_owned();
    let approved = confirm(&["approve", &id]);
    assert_eq!(code(&approved), 0, "{}", stderr(&approved));
    // The halted delivery was kept (not dead-lettered): the resumed run hands it to the agent
    // again and the approved call runs, once.
    let resumed = run(&["--resume"]);
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "router-1\n");
    assert!(
        stdout(&resumed).contains("restarted router-1"),
        "{}",
        stdout(&resumed)
    );
}
