//! `chorus run --store/--resume`: the seed-003 chain with three LLM agents (a fake model that
//! answers from the conversation it is sent, so asking again gives the same answer) and a tool
//! with a side-effect counter. The run is killed with SIGKILL in the middle of each model call
//! and after each item it sends, in turn, then resumed: every time the task completes with the
//! side effect done exactly once and the transcript of an uninterrupted run.

mod common;
#[allow(dead_code, reason = "only the chunk builders are used here")]
#[path = "../../chorus-agent/tests/support/fake_openai.rs"]
mod fake_openai;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use common::request;
use fake_openai::chat;
use serde_json::{Value, json};

/// The fake model's state: requests so far, and the one (1-based) it never answers.
struct Model {
    requests: AtomicUsize,
    hold: Option<usize>,
}

/// The text of every message of a request, in order.
fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap_or("").to_owned(),
                        m["content"].to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn escalation(summary: &str, steps: &[&str]) -> String {
    json!({
        "handoff_type": "ESCALATION",
        "summary": summary,
        "completed_steps": steps,
        "data": {
            "issue_category": "NETWORK_CONNECTIVITY",
            "severity": "HIGH",
            "customer_info": {"user_id": "john.doe@example.com", "name": "John Doe"},
            "technical_details": {"router_model": "RouterX-Pro", "isp": "GlobalNet", "symptoms": "hourly drops"}
        }
    })
    .to_string()
}

/// What the model answers: decided by the agent (its system prompt) and the last message.
fn decide(body: &Value) -> Vec<Value> {
    let all = messages(body);
    let system = all.first().map(|m| m.1.clone()).unwrap_or_default();
    let (role, last) = all.last().cloned().unwrap_or_default();
    let news = role == "user" && last.contains("STATUS_UPDATE");
    let call = |id: &str, name: &str, args: &str| {
        vec![
            chat::role(),
            chat::call_start(0, id, name, args),
            chat::finish("tool_calls"),
            chat::usage(50, 10),
        ]
    };
    let say = |text: &str| {
        vec![
            chat::role(),
            chat::text(text),
            chat::finish("stop"),
            chat::usage(50, 10),
        ]
    };
    if system.contains("CS agent") {
        if news {
            return say("Your connection is fixed: the router firmware was updated.");
        }
        return call(
            "call_cs_1",
            "transfer_to_technical_support",
            &escalation(
                "John's internet drops every hour.",
                &["Took the customer's report"],
            ),
        );
    }
    if system.contains("TS agent") {
        if news {
            return say("Level 3 resolved it with a firmware update.");
        }
        if role == "tool" && last.contains("T-100") {
            return call(
                "call_ts_2",
                "transfer_to_level3_expert",
                &escalation(
                    "Hourly drops; ticket T-100 opened.",
                    &["Opened ticket T-100"],
                ),
            );
        }
        return call("call_ts_1", "record_ticket", r#"{"ticket":"T-100"}"#);
    }
    say("Root cause: firmware 2.1 drops the DHCP renewal; pushed 2.3.")
}

async fn answer(State(model): State<Arc<Model>>, body: Bytes) -> Response {
    let n = model.requests.fetch_add(1, Ordering::SeqCst) + 1;
    if model.hold == Some(n) {
        std::future::pending::<()>().await;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let mut data: Vec<String> = decide(&body).iter().map(Value::to_string).collect();
    data.push("[DONE]".into());
    let text: String = data.iter().map(|d| format!("data: {d}\n\n")).collect();
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

/// Starts the fake model on 127.0.0.1:0; its base URL and state.
async fn model(hold: Option<usize>) -> (String, Arc<Model>) {
    let state = Arc::new(Model {
        requests: AtomicUsize::new(0),
        hold,
    });
    let app = axum::Router::new()
        .fallback(answer)
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.ok();
    });
    (format!("http://{addr}/v1"), state)
}

fn flow(dir: &Path) -> PathBuf {
    flow_with(dir, "")
}

/// The flow file, `extra` appended (a `[server]` table).
fn flow_with(dir: &Path, extra: &str) -> PathBuf {
    let script = dir.join("ticket.sh");
    std::fs::write(
        &script,
        format!(
            "echo \"$1\" >> {}\nprintf '{{\"status\":\"success\",\"ticket\":\"%s\"}}' \"$1\"\n",
            dir.join("tickets").display()
        ),
    )
    .unwrap();
    let text = format!(
        r#"name = "durable-desk"
mode = "handoffs"
max_steps = 20
[input]
from = "customer_john"
to = "customer_service"
text = "My internet keeps dropping every hour. Router: RouterX-Pro, ISP: GlobalNet."

[[tools]]
name = "record_ticket"
kind = "command"
program = "sh"
args = ["{script}", "{{ticket}}"]
idempotent = false
parameters = {{ type = "object", properties = {{ ticket = {{ type = "string" }} }}, required = ["ticket"] }}

[[agents]]
name = "customer_service"
kind = "llm"
model = "gpt-test"
handoffs = ["technical_support"]
personality = "CS agent: escalate connection problems."

[[agents]]
name = "technical_support"
kind = "llm"
model = "gpt-test"
tools = ["record_ticket"]
handoffs = ["level3_expert"]
personality = "TS agent: open a ticket, then escalate."

[[agents]]
name = "level3_expert"
kind = "llm"
model = "gpt-test"
personality = "L3 agent: find the root cause."
"#,
        script = script.display()
    );
    let path = dir.join("flow.toml");
    std::fs::write(&path, text + extra).unwrap();
    path
}

/// Starts `chorus run FLOW --transcript t.jsonl ARGS` in `dir` against the model at `base`.
fn run(dir: &Path, base: &str, args: &[&str], env: &[(&str, String)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["run", "flow.toml", "--transcript", "t.jsonl"])
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env("CHORUS_MODEL_BASE_URL", base)
        .env("OPENAI_API_KEY", "test-key")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (at most 60 s) for `child` to exit 0; its standard error.
async fn finish(mut child: Child) -> String {
    tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{err}");
        err
    })
    .await
    .unwrap()
}

/// What a transcript says, without the ids, times and measurements that differ between runs.
fn story(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("t.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    story_of(&lines)
}

/// What the documents say, without the ids, times and measurements that differ between runs;
/// each document must come once.
fn story_of(lines: &[Value]) -> Vec<Value> {
    let text = format!("{lines:#?}");
    let ids: std::collections::HashSet<String> = lines
        .iter()
        .map(|d| {
            d["id"]
                .as_str()
                .or(d["metadata"]["message_id"].as_str())
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids.len(), lines.len(), "every item once: {text}");
    lines
        .iter()
        .map(|d| {
            if d.get("role").is_some() {
                json!({"from": d["name"], "to": d["recipient"], "text": d["content"]})
            } else {
                let mut data = d["payload"]["data"].clone();
                if let Some(data) = data.as_object_mut() {
                    data.remove("in_response_to");
                }
                let actions: Vec<&Value> = d["context"]["previous_actions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| &a["details"])
                    .collect();
                json!({
                    "from": d["metadata"]["sender_id"], "to": d["metadata"]["recipient_id"],
                    "type": d["payload"]["handoff_type"], "data": data,
                    "summary": d["context"]["historical_data_summary"], "actions": actions,
                })
            }
        })
        .collect()
}

fn tickets(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("tickets"))
        .unwrap_or_default()
        .lines()
        .count()
}

/// Runs the flow in a new directory, killing the first process with SIGKILL once `at` says
/// so, then resumes it; the directory.
async fn interrupted(at: Kill, store: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    flow(dir.path());
    let hold = match at {
        Kill::InModelCall(n) => Some(n),
        Kill::AfterItem(_) => None,
    };
    let (base, state) = model(hold).await;
    let env = match at {
        Kill::AfterItem(n) => vec![("CHORUS_RUN_PAUSE_AFTER_ITEMS", n.to_string())],
        Kill::InModelCall(_) => vec![],
    };
    let mut first = run(dir.path(), &base, store, &env);
    let stderr = first.stderr.take().unwrap();
    let watched = state.clone();
    let waited = tokio::task::spawn_blocking(move || {
        let state = watched;
        let deadline = Instant::now() + Duration::from_secs(30);
        match at {
            Kill::InModelCall(n) => {
                while state.requests.load(Ordering::SeqCst) < n {
                    assert!(Instant::now() < deadline, "model call {n} never came");
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Kill::AfterItem(_) => {
                let mut lines = BufReader::new(stderr).lines();
                let paused = lines.any(|l| l.is_ok_and(|l| l.contains("paused after")));
                assert!(paused, "the run never paused");
            }
        }
        first.kill().unwrap();
        first.wait().unwrap()
    })
    .await
    .unwrap();
    assert!(!waited.success(), "killed");
    if let Kill::AfterItem(_) = at {
        settled_with_their_outputs(dir.path(), store, at).await;
    }
    // Killed in the middle: part of the transcript, the ticket opened only past model call 2.
    let sent = std::fs::read_to_string(dir.path().join("t.jsonl"))
        .unwrap_or_default()
        .lines()
        .count();
    match at {
        Kill::AfterItem(n) => assert_eq!(sent, n, "{at:?}"),
        Kill::InModelCall(n) => {
            assert!(sent < 6, "{at:?}: {sent}");
            assert_eq!(tickets(dir.path()), usize::from(n > 2), "{at:?}");
        }
    }
    let second = run(dir.path(), &base, &[store, &["--resume"]].concat(), &[]);
    finish(second).await;
    // Nothing recorded was asked again: only a model call cut off by the kill is made twice.
    let again = usize::from(matches!(at, Kill::InModelCall(_)));
    assert_eq!(state.requests.load(Ordering::SeqCst), 6 + again, "{at:?}");
    dir
}

/// What a killed run left in its store: no delivery whose outputs were recorded is still
/// waiting (the record, the outputs and the ack commit together), and every recorded output is
/// stored.
async fn settled_with_their_outputs(dir: &Path, store: &[&str], at: Kill) {
    let address = match store {
        ["--store", address] => address.to_string(),
        _ => format!("sqlite:{}", dir.join("t.store.db").display()),
    };
    let bus = chorus_bus::StoreAddress::parse(&address)
        .unwrap()
        .open(chorus_bus::BusConfig::default())
        .await
        .unwrap();
    let runs = bus.effects("journal/chorus-run/runs").await.unwrap();
    let run: Value = serde_json::from_slice(&runs.last().expect("a run recorded").record).unwrap();
    let task = run["task_id"].as_str().unwrap();
    for agent in &AGENTS[1..] {
        let recorded: std::collections::HashMap<String, Value> = bus
            .effects(&format!("journal/{agent}/{task}"))
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.message_id.starts_with("outputs-"))
            .map(|e| (e.message_id, serde_json::from_slice(&e.record).unwrap()))
            .collect();
        for waiting in bus.peek(agent, 100).await.unwrap() {
            let id = &waiting.envelope.id;
            let key = format!(
                "outputs-{}",
                uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, id.as_bytes()).simple()
            );
            assert!(
                !recorded.contains_key(&key),
                "killed {at:?}: {agent}'s delivery {id} waits again though its outputs were recorded"
            );
        }
        for (key, record) in &recorded {
            for item in record["items"].as_array().unwrap() {
                let id = item["id"]
                    .as_str()
                    .or(item["metadata"]["message_id"].as_str())
                    .unwrap();
                assert!(
                    bus.locate(id).await.unwrap().is_some(),
                    "killed {at:?}: {agent}'s output {id} ({key}) was recorded but not stored"
                );
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kill {
    /// While the model call with this number (from 1) waits for its answer.
    InModelCall(usize),
    /// Right after the run sent this many items (from 1; the first message is the first).
    AfterItem(usize),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_at_every_step_resumes_to_the_same_transcript_with_each_effect_once() {
    kill_a_run_at_every_step(Vec::new).await;
}

/// A fresh namespace on the test database for each run, when CHORUS_TEST_POSTGRES_URL is set;
/// the namespaces are deleted by the caller.
#[cfg(feature = "postgres")]
fn postgres_store(url: &str, namespaces: &std::sync::Mutex<Vec<String>>) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let ns = format!("chorus_test_chain_{}_{nanos}", std::process::id());
    namespaces.lock().unwrap().push(ns.clone());
    format!("{url}?namespace={ns}")
}

#[cfg(feature = "postgres")]
async fn drop_namespaces(url: &str, namespaces: std::sync::Mutex<Vec<String>>) {
    for ns in namespaces.into_inner().unwrap() {
        chorus_bus::PostgresBus::connect(url, &ns, Default::default())
            .await
            .expect("reconnect")
            .destroy()
            .await
            .expect("delete the test namespace");
    }
}

#[cfg(feature = "postgres")]
fn postgres_url(what: &str) -> Option<String> {
    let url = std::env::var("CHORUS_TEST_POSTGRES_URL").ok();
    if url.is_none() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** {what} on PostgreSQL NOT tested: CHORUS_TEST_POSTGRES_URL not set ***\n"
        );
    }
    url
}

/// The embedded run with its store (bus and journal) on PostgreSQL: `--store postgres://…`.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_run_killed_at_every_step_resumes_with_each_effect_once() {
    let Some(url) = postgres_url("the embedded durable run") else {
        return;
    };
    let namespaces = std::sync::Mutex::new(Vec::new());
    kill_a_run_at_every_step(|| vec!["--store".to_owned(), postgres_store(&url, &namespaces)])
        .await;
    drop_namespaces(&url, namespaces).await;
}

/// The chain run once cleanly, then killed at each model call and after each item and resumed,
/// each run with the arguments `store` gives (none: the store beside the transcript).
async fn kill_a_run_at_every_step(store: impl Fn() -> Vec<String>) {
    // The uninterrupted run.
    let clean = tempfile::tempdir().unwrap();
    flow(clean.path());
    let (base, state) = model(None).await;
    let args = store();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    finish(run(clean.path(), &base, &args, &[])).await;
    let expected = story(clean.path());
    let calls = state.requests.load(Ordering::SeqCst);
    assert_eq!(calls, 6, "one model call per step of the chain");
    assert_eq!(tickets(clean.path()), 1);
    let chain: Vec<(String, String)> = expected
        .iter()
        .map(|s| (s["from"].to_string(), s["to"].to_string()))
        .collect();
    assert_eq!(expected.len(), 6, "{expected:#?}");
    assert_eq!(expected[5]["to"], "customer_john", "{chain:?}");
    assert_eq!(
        expected[5]["text"][0]["text"],
        "Your connection is fixed: the router firmware was updated."
    );
    // The handoff history grows along the chain (seed 003): level 3 gets the first agent's
    // steps, then the second's, and the second's summary.
    assert_eq!(
        expected[2]["actions"],
        json!(["Took the customer's report", "Opened ticket T-100"]),
        "{:#}",
        expected[2]
    );
    assert_eq!(expected[2]["summary"], "Hourly drops; ticket T-100 opened.");

    let mut kills: Vec<Kill> = (1..=calls).map(Kill::InModelCall).collect();
    kills.extend((1..=expected.len()).map(Kill::AfterItem));
    for at in kills {
        let args = store();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let dir = interrupted(at, &args).await;
        assert_eq!(story(dir.path()), expected, "killed {at:?}");
        assert_eq!(
            tickets(dir.path()),
            1,
            "killed {at:?}: the ticket was opened once"
        );
    }
}

/// The agents of the hub test, with their tokens.
const AGENTS: [&str; 4] = [
    "customer_john",
    "customer_service",
    "technical_support",
    "level3_expert",
];
const ADMIN: &str = "admin-0123456789abcdef0123456789abcdef";

fn token(name: &str) -> String {
    format!("token-{name}-0123456789abcdef0123456789abcdef")
}

/// A hub with the four agents on `store`, its flow file for the workers, the directory.
fn hub(store: &str) -> (tempfile::TempDir, common::Served) {
    let dir = tempfile::tempdir().unwrap();
    let hash = |t: &str| {
        common::stdout(&common::chorus(&["serve", "--hash-token", t], ""))
            .trim()
            .to_owned()
    };
    let mut config = format!("admin_token_sha256 = \"{}\"\n", hash(ADMIN));
    let mut tokens = String::from("\n[server]\n[server.tokens]\n");
    for name in AGENTS {
        config.push_str(&format!(
            "[agents.{name}]\ntoken_sha256 = \"{}\"\n",
            hash(&token(name))
        ));
        tokens.push_str(&format!("{name} = \"{}\"\n", token(name)));
    }
    std::fs::write(dir.path().join("chorus.toml"), config).unwrap();
    flow_with(dir.path(), &tokens);
    let mut served = common::Served::start(
        dir.path(),
        &["--store", store, "--config", "chorus.toml"],
        Stdio::null(),
    );
    served.keep_reading();
    (dir, served)
}

/// Starts the worker of `agent` on the hub at `addr`, with the model at `base`; with
/// `pause_after`, it stops after sending that many items, its standard error piped.
fn worker(dir: &Path, agent: &str, addr: &str, base: &str, pause_after: Option<usize>) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_chorus"));
    command
        .args(["agent", "run", "flow.toml", "--agent", agent])
        .args(["--server", &format!("http://{addr}"), "--renew-ms", "500"])
        .env("CHORUS_MODEL_BASE_URL", base)
        .env("OPENAI_API_KEY", "test-key")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(n) = pause_after {
        command
            .env("CHORUS_RUN_PAUSE_AFTER_ITEMS", n.to_string())
            .stderr(Stdio::piped());
    }
    command.spawn().unwrap()
}

/// Kills the workers when the test ends, however it ends.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Where a worker of the hub test is killed.
#[derive(Debug, Clone, Copy)]
enum HubKill {
    /// The worker making model call `n` of the chain, while it waits for the answer.
    InModelCall(usize),
    /// The worker of this agent, right after it sent its `n`-th item (before the ack).
    AfterSent(&'static str, usize),
}

/// Runs the chain on a hub with one worker per agent; with `kill_at`, one worker is killed
/// with SIGKILL there and started again. The task's documents on the hub and the tickets opened.
async fn on_hub(kill_at: Option<HubKill>, store: &str) -> (Vec<Value>, usize) {
    let (dir, server) = hub(store);
    let addr = server.addr.clone();
    let hold = match kill_at {
        Some(HubKill::InModelCall(n)) => Some(n),
        _ => None,
    };
    let (base, state) = model(hold).await;
    let agents = ["customer_service", "technical_support", "level3_expert"];
    let pause = |agent: &str| match kill_at {
        Some(HubKill::AfterSent(a, n)) if a == agent => Some(n),
        _ => None,
    };
    let mut workers = Workers(
        agents
            .iter()
            .map(|a| worker(dir.path(), a, &addr, &base, pause(a)))
            .collect(),
    );
    std::thread::sleep(Duration::from_millis(800));
    let first = json!({
        "role": "user", "id": "first-1", "name": "customer_john", "recipient": "customer_service",
        "content": "My internet keeps dropping every hour. Router: RouterX-Pro, ISP: GlobalNet.",
        "metadata": {"task_id": "task-hub-1"}
    });
    let (status, body) = request(
        &addr,
        "POST",
        "/v1/messages",
        &token("customer_john"),
        Some(&first),
    );
    assert_eq!(status, 201, "{body}");
    let victim = match kill_at {
        Some(HubKill::InModelCall(n)) => {
            // Which agent makes model call n of the chain.
            let maker = [
                "customer_service",
                "technical_support",
                "technical_support",
                "level3_expert",
                "technical_support",
                "customer_service",
            ][n - 1];
            let deadline = Instant::now() + Duration::from_secs(30);
            while state.requests.load(Ordering::SeqCst) < n {
                assert!(Instant::now() < deadline, "model call {n} never came");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Some(maker)
        }
        Some(HubKill::AfterSent(agent, _)) => {
            let i = agents.iter().position(|a| *a == agent).unwrap();
            let stderr = workers.0[i].stderr.take().unwrap();
            let paused = tokio::task::spawn_blocking(move || {
                BufReader::new(stderr)
                    .lines()
                    .any(|l| l.is_ok_and(|l| l.contains("paused after")))
            })
            .await
            .unwrap();
            assert!(paused, "{kill_at:?}: the worker never paused");
            Some(agent)
        }
        None => None,
    };
    if let Some(agent) = victim {
        let i = agents.iter().position(|a| *a == agent).unwrap();
        workers.0[i].kill().unwrap();
        workers.0[i].wait().unwrap();
        workers.0[i] = worker(dir.path(), agent, &addr, &base, None);
    }
    let answered = || {
        let (status, body) = request(
            &addr,
            "GET",
            "/v1/agents/customer_john/inbox/messages",
            ADMIN,
            None,
        );
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["depth"].as_u64() == Some(1)
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !answered() {
        assert!(
            Instant::now() < deadline,
            "the customer got no answer (kill at {kill_at:?})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, body) = request(
        &addr,
        "GET",
        "/v1/tasks/task-hub-1/messages?limit=100",
        ADMIN,
        None,
    );
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    let documents: Vec<Value> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message"].clone())
        .collect();
    drop(workers);
    drop(server);
    // Nothing recorded was asked again: only a model call cut off by the kill is made twice.
    let again = usize::from(matches!(kill_at, Some(HubKill::InModelCall(_))));
    assert_eq!(
        state.requests.load(Ordering::SeqCst),
        6 + again,
        "kill at {kill_at:?}"
    );
    (documents, tickets(dir.path()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_on_a_hub_killed_at_every_step_finish_the_task_with_each_effect_once() {
    kill_workers_at_every_step(|| "memory".to_owned()).await;
}

/// The same chain with the hub's store on PostgreSQL (a fresh schema per run), when
/// CHORUS_TEST_POSTGRES_URL is set.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_workers_killed_at_every_step_finish_the_task_with_each_effect_once() {
    let Some(url) = postgres_url("the durable chain of workers on a hub") else {
        return;
    };
    let namespaces = std::sync::Mutex::new(Vec::new());
    kill_workers_at_every_step(|| postgres_store(&url, &namespaces)).await;
    drop_namespaces(&url, namespaces).await;
}

/// The chain run once cleanly, then once per kill point, each on a hub on the store `store`
/// names; each run's story and its single ticket match the clean run's.
async fn kill_workers_at_every_step(store: impl Fn() -> String) {
    let (clean, opened) = on_hub(None, &store()).await;
    let expected = story_of(&clean);
    assert_eq!(expected.len(), 6, "{expected:#?}");
    assert_eq!(opened, 1);
    let mut kills: Vec<HubKill> = (1..=6).map(HubKill::InModelCall).collect();
    // After each item of the chain, by the agent that sent it (its first or its second).
    kills.extend([
        HubKill::AfterSent("customer_service", 1),
        HubKill::AfterSent("technical_support", 1),
        HubKill::AfterSent("level3_expert", 1),
        HubKill::AfterSent("technical_support", 2),
        HubKill::AfterSent("customer_service", 2),
    ]);
    for at in kills {
        let (documents, opened) = on_hub(Some(at), &store()).await;
        assert_eq!(story_of(&documents), expected, "killed {at:?}");
        assert_eq!(opened, 1, "killed {at:?}: the ticket was opened once");
    }
}
