//! A2A with the official A2A Python SDK (`a2a-sdk` from PyPI) as the peer, on 127.0.0.1, both
//! ways. Its client drives a chorus agent (`chorus agent run examples/a2a/desk.toml` on `chorus
//! serve`) through `examples/a2a/sdk_client.py`: resolve the card, stream a message to
//! `completed`, get the task, subscribe to a second task and cancel it over JSON-RPC; a third
//! task to `completed` over HTTP+JSON; a fourth through the hub's card and endpoint, blocking
//! (the script parses every answer strictly: unknown fields refused, the SDK's required-field
//! check). Its server (`examples/a2a/sdk_agent.py`) is the remote agent of a flow
//! (`kind = "a2a"`): an ESCALATION published on the hub reaches it through a `chorus agent run`
//! worker, and its answer comes back into the task's timeline as a STATUS_UPDATE with the type,
//! priority and expiry it saw; a remote task that asks for input is continued by the task's next
//! handoff; and `chorus run examples/a2a/escalate.toml` does the same in one process.
//!
//! Needs `CHORUS_TEST_PYTHON` (a python with `a2a-sdk` installed, as `.ci/run` sets it); without
//! it the tests say "not run: …"; with it and no `a2a-sdk` they fail.

mod common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use common::{repo, serve_memory};
use serde_json::Value;

/// The Python of `CHORUS_TEST_PYTHON` when it has the A2A SDK; `None` (after saying "not run")
/// when the variable is unset.
fn python() -> Option<PathBuf> {
    common::python_with(
        "the A2A peer, the a2a-sdk SDK",
        "a2a.client, a2a.server.routes",
    )
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_a2a_sdk_client_drives_a_chorus_agent_to_completed_and_cancels_a_task() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let served = serve_memory(dir.path(), &repo().join("examples/a2a/chorus.toml"));
    let _desk = worker(
        dir.path(),
        &repo().join("examples/a2a/desk.toml"),
        "desk",
        &served.addr,
    );
    let out = Command::new(&python)
        .arg(repo().join("examples/a2a/sdk_client.py"))
        .arg(format!("http://{}/a2a/desk", served.addr))
        .arg("front-a2a-example-token")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}\n{stdout}\n{}\ndesk: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr),
        std::fs::read_to_string(dir.path().join("desk.log")).unwrap_or_default()
    );
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        seen["card"]["url"],
        format!("http://{}/a2a/desk", served.addr)
    );
    assert_eq!(
        seen["card"]["extensions"][0],
        chorus_server::HANDOFF_EXTENSION,
        "{seen}"
    );
    let states = seen["streamed"]["states"].as_array().unwrap();
    assert_eq!(states.first().unwrap(), "TASK_STATE_SUBMITTED", "{seen}");
    assert_eq!(states.last().unwrap(), "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(
        seen["streamed"]["answer"],
        "Your invoice was sent to the address on file this morning."
    );
    let history = seen["task"]["history"].as_array().unwrap();
    let roles: Vec<&str> = history
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["ROLE_USER", "ROLE_AGENT"], "{seen}");
    assert_eq!(history[0]["parts"][0]["text"], "Where is my invoice?");
    assert_eq!(seen["canceled"]["after"], "TASK_STATE_CANCELED", "{seen}");
    let followed = seen["canceled"]["subscribed"].as_array().unwrap();
    assert_eq!(followed.last().unwrap(), "TASK_STATE_CANCELED", "{seen}");
    // Through the hub's card and endpoint, blocking until the answer.
    assert_eq!(
        seen["hub"]["skills"],
        serde_json::json!(["desk", "front"]),
        "{seen}"
    );
    assert_eq!(seen["hub"]["state"], "TASK_STATE_COMPLETED", "{seen}");
    // The same over the HTTP+JSON binding.
    let rest = &seen["rest"];
    assert_eq!(
        rest["states"].as_array().unwrap().last().unwrap(),
        "TASK_STATE_COMPLETED",
        "{seen}"
    );
    assert_eq!(
        (rest["task"].as_str(), rest["messages"].as_u64()),
        (Some("TASK_STATE_COMPLETED"), Some(2)),
        "{seen}"
    );
    // ListTasks through the SDK, two pages over the two bindings: the four tasks sent to the
    // desk, the one answered last first, each once.
    let listed = &seen["listed"];
    assert_eq!(listed["total"], 4, "{seen}");
    assert_eq!(listed["last_token"], "", "{seen}");
    assert_eq!(listed["first"][0], seen["hub"]["id"], "{seen}");
    let mut got: Vec<&str> = [&listed["first"], &listed["next"]]
        .iter()
        .flat_map(|page| page.as_array().unwrap())
        .map(|id| id.as_str().unwrap())
        .collect();
    let mut sent: Vec<&str> = listed["sent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    got.sort();
    sent.sort();
    assert_eq!(got, sent, "{seen}");
}

/// The A2A agent of `examples/a2a/sdk_agent.py` (the a2a-sdk server) on a free port of
/// 127.0.0.1 (it binds port 0 and says which it got), once it listens; its port. Its card says
/// it streams (chorus then follows `SendStreamingMessage`) unless `streaming` is false (chorus
/// then calls `SendMessage` and polls `GetTask`).
fn sdk_agent(python: &PathBuf, streaming: bool) -> (Killed, u16) {
    use std::io::BufRead;
    let mut child = Command::new(python)
        .arg(repo().join("examples/a2a/sdk_agent.py"))
        .arg("0")
        .args((!streaming).then_some("--no-streaming"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("the SDK agent's first line").unwrap();
    let port = first
        .strip_prefix("listening on http://127.0.0.1:")
        .and_then(|rest| rest.trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    std::thread::spawn(move || lines.for_each(drop));
    (Killed(child), port)
}

/// One request to the hub; the status and the JSON answer (`null` when it is not JSON).
fn request_json(
    addr: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Value>,
) -> (u16, Value) {
    let (status, text) = common::request(addr, method, path, token, body);
    (
        status,
        serde_json::from_str(text.trim()).unwrap_or(Value::Null),
    )
}

/// `chorus agent run FLOW --agent AGENT --server http://ADDR` in `dir`, its standard error in
/// `dir/AGENT.log`.
fn worker(dir: &std::path::Path, flow: &std::path::Path, agent: &str, addr: &str) -> Killed {
    let log = std::fs::File::create(dir.join(format!("{agent}.log"))).unwrap();
    Killed(
        Command::new(env!("CARGO_BIN_EXE_chorus"))
            .args(["agent", "run"])
            .arg(flow)
            .args(["--agent", agent, "--server", &format!("http://{addr}")])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

/// The tokens of the remote-agent hub.
const ADMIN: &str = "admin-a2a-test-token";
const SUPPORT: &str = "support-a2a-test-token";
const REMOTE: &str = "remote-a2a-test-token";

/// A hub with agents `support` and `remote`, and `remote` (a flow agent of kind a2a for the
/// a2a-sdk agent on `port`) running as a worker on it.
struct RemoteHub {
    dir: tempfile::TempDir,
    served: common::Served,
    _worker: Killed,
}

impl RemoteHub {
    fn start(port: u16) -> RemoteHub {
        let dir = tempfile::tempdir().unwrap();
        let hash = chorus_server::hash_token;
        std::fs::write(
            dir.path().join("chorus.toml"),
            format!(
                "admin_token_sha256 = \"{}\"\n[agents.support]\ntoken_sha256 = \"{}\"\n\
                 [agents.remote]\ntoken_sha256 = \"{}\"\n",
                hash(ADMIN),
                hash(SUPPORT),
                hash(REMOTE)
            ),
        )
        .unwrap();
        let served = serve_memory(dir.path(), &dir.path().join("chorus.toml"));
        let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
        std::fs::write(
            dir.path().join("remote.toml"),
            format!(
                "name = \"remote\"\n[input]\ntext = \"unused\"\n[[agents]]\nname = \"remote\"\n\
                 kind = \"a2a\"\ncard = \"{card}\"\ntimeout_secs = 20\n\
                 [server]\n[server.tokens]\nremote = \"{REMOTE}\"\n"
            ),
        )
        .unwrap();
        let worker = worker(
            dir.path(),
            &dir.path().join("remote.toml"),
            "remote",
            &served.addr,
        );
        RemoteHub {
            dir,
            served,
            _worker: worker,
        }
    }

    /// Publishes `document` as `support`.
    fn publish(&self, document: &Value) {
        let (status, receipt) = request_json(
            &self.served.addr,
            "POST",
            "/v1/messages",
            SUPPORT,
            Some(document),
        );
        assert_eq!(status, 201, "{receipt}");
    }

    /// The stored messages of `task` once there are at least `count` (30 s at most).
    fn timeline(&self, task: &str, count: usize) -> Vec<Value> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let path = format!("/v1/tasks/{task}/messages");
            let (_, page) = request_json(&self.served.addr, "GET", &path, ADMIN, None);
            let items = page["items"].as_array().cloned().unwrap_or_default();
            if items.len() >= count {
                return items.into_iter().map(|i| i["message"].clone()).collect();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{} of {count} messages in the task; the worker said: {}",
                items.len(),
                std::fs::read_to_string(self.dir.path().join("remote.log")).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }
}

/// A seed-003 handoff from `support` to `remote` in `task`.
fn from_support(message_id: &str, task: &str, kind: &str, data: Value) -> Value {
    serde_json::json!({
        "metadata": {"message_id": message_id, "timestamp": "2026-01-01T10:00:00.000Z",
            "protocol_version": "1.0.0", "sender_id": "support", "recipient_id": "remote",
            "task_id": task, "priority": "CRITICAL",
            "expiration_time": "2099-06-30T12:00:00.000Z"},
        "context": {"workflow_state": "CUSTOMER_ISSUE_ESCALATED", "previous_actions": []},
        "payload": {"handoff_type": kind, "data": data},
        "instructions": {}
    })
}

/// ESCALATION data; `logs_attached` false makes the a2a-sdk agent ask for them.
fn escalation_data(logs_attached: Option<bool>) -> Value {
    let mut details = serde_json::json!({"symptoms": "drops every hour"});
    if let Some(attached) = logs_attached {
        details["logs_attached"] = Value::Bool(attached);
    }
    serde_json::json!({"issue_category": "NETWORK_CONNECTIVITY", "severity": "CRITICAL",
        "customer_info": {"user_id": "u1", "name": "John Doe"}, "technical_details": details})
}

#[test]
fn an_escalation_reaches_the_a2a_sdk_agent_and_comes_back_as_a_status_update_with_its_keys() {
    let Some(python) = python() else { return };
    let (_agent, port) = sdk_agent(&python, true);
    let hub = RemoteHub::start(port);
    let message_id = "5f0b1c2d-e5f6-4890-a234-567890abcd77";
    let task = "task-a2a-escalation";
    hub.publish(&from_support(
        message_id,
        task,
        "ESCALATION",
        escalation_data(None),
    ));
    let timeline = hub.timeline(task, 2);
    let update = &timeline[1];
    assert_eq!(
        update["payload"]["handoff_type"], "STATUS_UPDATE",
        "{update}"
    );
    assert_eq!(update["metadata"]["sender_id"], "remote");
    assert_eq!(update["metadata"]["recipient_id"], "support");
    assert_eq!(update["metadata"]["priority"], "CRITICAL");
    assert_eq!(
        update["metadata"]["expiration_time"],
        "2099-06-30T12:00:00.000Z"
    );
    assert_eq!(update["payload"]["data"]["status"], "COMPLETED");
    assert_eq!(update["payload"]["data"]["in_response_to"], message_id);
    // What the a2a-sdk agent read in the packet it was sent: type, priority and expiry intact.
    assert_eq!(
        update["payload"]["data"]["summary"],
        format!(
            "Handled ESCALATION {message_id} from support: priority CRITICAL, expires 2099-06-30T12:00:00.000Z."
        )
    );
    // The same task, read over chorus's own A2A endpoint by the agent that escalated.
    let (_, task) = request_json(
        &hub.served.addr,
        "POST",
        "/a2a/remote",
        SUPPORT,
        Some(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask",
            "params": {"id": task}}),
        ),
    );
    assert_eq!(
        task["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{task}"
    );
}

#[test]
fn a_remote_task_that_asks_for_input_is_continued_by_the_next_handoff_of_the_task() {
    let Some(python) = python() else { return };
    let (_agent, port) = sdk_agent(&python, false);
    let hub = RemoteHub::start(port);
    let task = "task-a2a-input";
    let escalation = from_support(
        "6f0b1c2d-e5f6-4890-a234-567890abcd88",
        task,
        "ESCALATION",
        escalation_data(Some(false)),
    );
    hub.publish(&escalation);
    let asked = &hub.timeline(task, 2)[1];
    assert_eq!(asked["payload"]["handoff_type"], "STATUS_UPDATE", "{asked}");
    assert_eq!(asked["payload"]["data"]["status"], "BLOCKED", "{asked}");
    assert_eq!(
        asked["payload"]["data"]["blocked_on"],
        "Please send the modem logs."
    );
    let info_id = "7f0b1c2d-e5f6-4890-a234-567890abcd99";
    let data = serde_json::json!({"provided_info": {"modem_logs": "log-123"},
        "in_response_to": asked["metadata"]["message_id"]});
    hub.publish(&from_support(info_id, task, "PROVIDE_INFORMATION", data));
    let done = &hub.timeline(task, 4)[3];
    assert_eq!(done["payload"]["data"]["status"], "COMPLETED", "{done}");
    // The same remote task answered: it thanks for what the second handoff carried.
    assert_eq!(
        done["payload"]["data"]["summary"],
        format!(
            "Thanks, with that: Handled PROVIDE_INFORMATION {info_id} from support: priority \
             CRITICAL, expires 2099-06-30T12:00:00.000Z."
        )
    );
}

#[test]
fn the_documented_flow_hands_off_to_the_a2a_sdk_agent() {
    let Some(python) = python() else { return };
    let (_agent, port) = sdk_agent(&python, true);
    let dir = tempfile::tempdir().unwrap();
    let flow = std::fs::read_to_string(repo().join("examples/a2a/escalate.toml"))
        .unwrap()
        .replace("127.0.0.1:7790", &format!("127.0.0.1:{port}"));
    std::fs::write(dir.path().join("escalate.toml"), flow).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["run", "escalate.toml", "--transcript", "t.jsonl"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The steps are said on standard error, the conversation on standard output.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("remote → customer_service STATUS_UPDATE"),
        "{stderr}"
    );
    assert!(
        stdout.contains("Update from our partner: Handled ESCALATION"),
        "{stdout}"
    );
    assert!(stdout.contains("priority HIGH"), "{stdout}");
}
