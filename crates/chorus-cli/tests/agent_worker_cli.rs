//! `chorus agent run`: one agent of a flow as a worker on a real `chorus serve`, settling each
//! delivery (ack, nack with backoff, escalation, dead letter), keeping slow work leased, and
//! sharing a pool with its replicas.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Served, chorus, request, stdout};
use serde_json::{Value, json};

const ADMIN: &str = "admin-0123456789abcdef0123456789abcdef";
const HANDOFF_ID: &str = "0b1b2c3d-e5f6-7890-1234-567890abcd01";

/// The agents of the tests' `chorus.toml`, each with a token `token-<name>-…`.
fn token(name: &str) -> String {
    format!("token-{name}-0123456789abcdef0123456789abcdef")
}

/// Writes `chorus.toml` in `dir`: the admin, the agents `ops`, `level3`, `worker_a` (its inbox's
/// ack wait `ack_wait_secs`), `tech` reading `tech_pool`; every inbox's ack wait `ack_wait_secs`.
fn server_config(dir: &Path, ack_wait_secs: u64) {
    let hash = |t: &str| {
        stdout(&chorus(&["serve", "--hash-token", t], ""))
            .trim()
            .to_owned()
    };
    let mut config = format!(
        "admin_token_sha256 = \"{}\"\nack_wait_secs = {ack_wait_secs}\nmax_deliver = 10\n",
        hash(ADMIN)
    );
    for name in ["ops", "level3", "worker_a", "tech"] {
        config.push_str(&format!(
            "[agents.{name}]\ntoken_sha256 = \"{}\"\n",
            hash(&token(name))
        ));
        if name == "tech" {
            config.push_str("read = [\"tech_pool\"]\n");
        }
    }
    std::fs::write(dir.join("chorus.toml"), config).unwrap();
}

/// The `[server]` table of the tests' flows.
fn server_table() -> String {
    let mut table = String::from("\n[server]\n[server.tokens]\n");
    for name in ["ops", "level3", "worker_a", "tech"] {
        table.push_str(&format!("{name} = \"{}\"\n", token(name)));
    }
    table
}

fn serve(dir: &Path) -> Served {
    let mut served = Served::start(
        dir,
        &["--store", "memory", "--config", "chorus.toml"],
        Stdio::null(),
    );
    served.keep_reading();
    served
}

/// A flow with one rule agent `agent` that runs `script` (sh, `$1` = the message id) on every
/// message and every ESCALATION, then replies `done <message id>` to the sender.
fn flow(dir: &Path, agent: &str, script: &str) -> PathBuf {
    let text = format!(
        r#"name = "worker-test"
mode = "handoffs"
[input]
from = "ops"
text = "unused"

[[tools]]
name = "work"
kind = "command"
program = "sh"
args = ["-c", {script:?}, "sh", "{{m}}"]

[[agents]]
name = "{agent}"
kind = "rule"

[[agents.rules]]
on = "message"
[[agents.rules.then]]
action = "tool"
tool = "work"
arguments = {{ m = "${{message_id}}" }}
[[agents.rules.then]]
action = "reply"
text = "done ${{message_id}}"

[[agents.rules]]
on = "ESCALATION"
[[agents.rules.then]]
action = "tool"
tool = "work"
arguments = {{ m = "${{message_id}}" }}
"#
    ) + &server_table();
    let path = dir.join(format!("{agent}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Starts `chorus agent run FLOW --agent AGENT --server URL EXTRA…`, its standard error in
/// `dir/AGENT-N.log`.
fn worker(dir: &Path, flow: &Path, agent: &str, addr: &str, extra: &[&str], n: u32) -> Child {
    let log = std::fs::File::create(dir.join(format!("{agent}-{n}.log"))).unwrap();
    Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args(["agent", "run", flow.to_str().unwrap(), "--agent", agent])
        .args(["--server", &format!("http://{addr}")])
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// Publishes a chorus message `text` from `ops` to `to` with id `id`.
fn send(addr: &str, to: &str, id: &str, text: &str) {
    let message =
        json!({"role": "user", "content": text, "name": "ops", "recipient": to, "id": id});
    let (status, body) = request(addr, "POST", "/v1/messages", &token("ops"), Some(&message));
    assert_eq!(status, 201, "{body}");
}

/// The documents waiting in `inbox` (admin peek).
fn waiting(addr: &str, inbox: &str) -> Vec<Value> {
    let (status, body) = request(
        addr,
        "GET",
        &format!("/v1/agents/{inbox}/inbox/messages?limit=100"),
        ADMIN,
        None,
    );
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    page["messages"].as_array().cloned().unwrap_or_default()
}

fn dead_letters(addr: &str) -> Vec<Value> {
    let (status, body) = request(addr, "GET", "/v1/dead-letters?limit=100", ADMIN, None);
    assert_eq!(status, 200, "{body}");
    let page: Value = serde_json::from_str(&body).unwrap();
    page["items"].as_array().cloned().unwrap_or_default()
}

/// Waits up to `secs` for `ready` to hold; panics with `what` otherwise.
fn wait_until(secs: u64, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Sends SIGTERM to `child` and waits up to 10 s for it to end; its standard error log.
fn stop(mut child: Child, dir: &Path, log: &str) -> String {
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
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the worker did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = std::fs::read_to_string(dir.join(log)).unwrap();
    assert!(status.success(), "{log}");
    log
}

/// Kills the child when a test fails before stopping it.
struct Guard(Option<Child>);

impl Guard {
    fn take(&mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[test]
fn a_failing_agent_is_retried_with_backoff_then_dead_lettered_or_escalated_never_acked() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 30);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let attempts = dir.path().join("attempts");
    let flow = flow(
        dir.path(),
        "worker_a",
        &format!("echo \"$1\" >> {}; exit 3", attempts.display()),
    );
    let mut w = Guard(Some(worker(
        dir.path(),
        &flow,
        "worker_a",
        &addr,
        &["--retries", "2", "--backoff-ms", "300"],
        1,
    )));

    // A message: no strategy, so the worker's two retries, then a dead letter.
    let started = Instant::now();
    send(&addr, "worker_a", "m-fail-1", "please work");
    wait_until(30, "the dead letter", || !dead_letters(&addr).is_empty());
    let took = started.elapsed();
    let letters = dead_letters(&addr);
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0]["message_id"], "m-fail-1");
    assert_eq!(letters[0]["reason"]["kind"], "failed", "{letters:?}");
    assert_eq!(letters[0]["reason"]["attempts"], 3, "{letters:?}");
    assert!(
        letters[0]["reason"]["error"]
            .as_str()
            .unwrap()
            .contains("code 3"),
        "{letters:?}"
    );
    assert_eq!(lines(&attempts), vec!["m-fail-1"; 3], "one run per attempt");
    // Backoff: 300 ms after the first failure, 600 ms after the second.
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(waiting(&addr, "worker_a").is_empty());
    assert!(waiting(&addr, "ops").is_empty(), "no reply for a failure");

    // A handoff whose strategy says one retry, then level3 and a fallback notice to the sender.
    let mut packet: Value = serde_json::from_str(
        &std::fs::read_to_string(common::repo().join("examples/seeds/003-escalation.json"))
            .unwrap(),
    )
    .unwrap();
    packet["metadata"]["message_id"] = json!(HANDOFF_ID);
    packet["metadata"]["sender_id"] = json!("ops");
    packet["metadata"]["recipient_id"] = json!("worker_a");
    packet["instructions"]["failure_handling_strategy"] = json!({
        "retry_count": 1, "escalate_to": "level3", "fallback_action": "notify_customer_of_delay"
    });
    let (status, body) = request(&addr, "POST", "/v1/messages", &token("ops"), Some(&packet));
    assert_eq!(status, 201, "{body}");
    wait_until(30, "the escalation", || {
        !waiting(&addr, "level3").is_empty()
    });
    wait_until(10, "the fallback notice", || {
        !waiting(&addr, "ops").is_empty()
    });
    let forwarded = &waiting(&addr, "level3")[0]["message"];
    assert_eq!(forwarded["metadata"]["sender_id"], "worker_a");
    let actions = forwarded["context"]["previous_actions"].as_array().unwrap();
    assert_eq!(actions.last().unwrap()["action_type"], "FAILED_ATTEMPT");
    let notice = &waiting(&addr, "ops")[0]["message"];
    assert_eq!(notice["payload"]["handoff_type"], "NOTIFICATION");
    assert_eq!(
        notice["payload"]["data"]["details"]["fallback_action"],
        "notify_customer_of_delay"
    );
    let runs = lines(&attempts);
    assert_eq!(
        runs.iter().filter(|l| *l == HANDOFF_ID).count(),
        2,
        "retry_count 1: two runs"
    );
    assert_eq!(dead_letters(&addr).len(), 1, "escalated, not dead-lettered");
    wait_until(10, "the inbox to empty", || {
        waiting(&addr, "worker_a").is_empty()
    });

    let log = stop(w.take(), dir.path(), "worker_a-1.log");
    assert!(
        log.contains("1 acked, 3 retried, 1 escalated, 1 dead-lettered, 0 handed back"),
        "{log}"
    );
    drop(server);
}

#[test]
fn a_handler_slower_than_the_ack_wait_keeps_its_lease_and_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 1);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let runs = dir.path().join("runs");
    let flow = flow(
        dir.path(),
        "worker_a",
        &format!("echo \"$1\" >> {}; sleep 3", runs.display()),
    );
    let mut w = Guard(Some(worker(
        dir.path(),
        &flow,
        "worker_a",
        &addr,
        &["--renew-ms", "300", "--max-in-flight", "2"],
        1,
    )));
    send(&addr, "worker_a", "m-slow-1", "take your time");
    wait_until(20, "the reply", || !waiting(&addr, "ops").is_empty());
    let reply = &waiting(&addr, "ops")[0]["message"];
    assert_eq!(reply["content"], "done m-slow-1", "{reply}");
    // Past three ack waits, the message was never delivered again.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(lines(&runs), vec!["m-slow-1"], "handled once");
    assert!(waiting(&addr, "worker_a").is_empty(), "acked");
    assert!(dead_letters(&addr).is_empty());
    // A delivery held at SIGTERM goes back to the inbox at once, not after the ack wait.
    send(&addr, "worker_a", "m-slow-2", "interrupted");
    wait_until(10, "the second run", || lines(&runs).len() == 2);
    let log = stop(w.take(), dir.path(), "worker_a-1.log");
    assert!(
        log.contains("1 acked, 0 retried, 0 escalated, 0 dead-lettered, 1 handed back"),
        "{log}"
    );
    let back = waiting(&addr, "worker_a");
    assert_eq!(back.len(), 1, "{back:?}");
    assert_eq!(back[0]["message"]["id"], "m-slow-2");
    assert_eq!(back[0]["state"], "ready", "{back:?}");
    drop(server);
}

#[test]
fn two_replicas_share_a_pool_and_one_finishes_what_a_killed_one_held() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 2);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let runs = dir.path().join("runs");
    let flow = flow(
        dir.path(),
        "tech",
        &format!("echo \"$PPID $1\" >> {}; sleep 1", runs.display()),
    );
    let args = ["--inbox", "tech_pool"];
    let mut a = Guard(Some(worker(dir.path(), &flow, "tech", &addr, &args, 1)));
    let mut b = Guard(Some(worker(dir.path(), &flow, "tech", &addr, &args, 2)));
    let (pid_a, pid_b) = (
        a.0.as_ref().unwrap().id().to_string(),
        b.0.as_ref().unwrap().id().to_string(),
    );
    // Both replicas are connected before the work arrives.
    std::thread::sleep(Duration::from_millis(800));
    let ids: Vec<String> = (0..6).map(|i| format!("m-pool-{i}")).collect();
    for id in &ids {
        send(&addr, "tech_pool", id, "work item");
    }
    wait_until(30, "six replies", || waiting(&addr, "ops").len() == 6);
    let handled = lines(&runs);
    assert_eq!(handled.len(), 6, "each delivery handled once: {handled:?}");
    let mut seen: Vec<&str> = handled
        .iter()
        .map(|l| l.split(' ').nth(1).unwrap())
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, ids.iter().map(String::as_str).collect::<Vec<_>>());
    let by_a = handled
        .iter()
        .filter(|l| l.starts_with(&format!("{pid_a} ")))
        .count();
    let by_b = handled
        .iter()
        .filter(|l| l.starts_with(&format!("{pid_b} ")))
        .count();
    assert!(by_a > 0 && by_b > 0, "both replicas worked: {handled:?}");
    assert_eq!(by_a + by_b, 6);

    // Each replica takes one slow item; one replica is killed while working on its item.
    std::fs::write(&runs, "").unwrap();
    let slow = flow_slow(dir.path(), &runs);
    // Replace the replicas by ones running the slow script.
    let log_a = stop(a.take(), dir.path(), "tech-1.log");
    let log_b = stop(b.take(), dir.path(), "tech-2.log");
    assert!(log_a.contains("0 handed back") && log_b.contains("0 handed back"));
    let mut a = Guard(Some(worker(dir.path(), &slow, "tech", &addr, &args, 3)));
    let mut b = Guard(Some(worker(dir.path(), &slow, "tech", &addr, &args, 4)));
    let (pid_a, pid_b) = (
        a.0.as_ref().unwrap().id().to_string(),
        b.0.as_ref().unwrap().id().to_string(),
    );
    std::thread::sleep(Duration::from_millis(800));
    send(&addr, "tech_pool", "m-slow-a", "slow item");
    send(&addr, "tech_pool", "m-slow-b", "slow item");
    wait_until(10, "both replicas working", || lines(&runs).len() == 2);
    let started = lines(&runs);
    let held_by_a = started
        .iter()
        .find(|l| l.starts_with(&format!("{pid_a} ")))
        .map(|l| l.split(' ').nth(1).unwrap().to_owned())
        .unwrap_or_else(|| panic!("replica a took nothing: {started:?}"));
    let mut killed = a.take();
    killed.kill().unwrap();
    killed.wait().unwrap();
    // The survivor finishes its own item and, once the killed one's lease runs out, that one.
    wait_until(30, "both slow replies", || waiting(&addr, "ops").len() == 8);
    let replies: Vec<String> = waiting(&addr, "ops")
        .iter()
        .map(|m| m["message"]["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        replies.contains(&format!("done {held_by_a}")),
        "{replies:?}"
    );
    let finished_by_b = lines(&runs)
        .iter()
        .any(|l| *l == format!("{pid_b} {held_by_a}"));
    assert!(
        finished_by_b,
        "the survivor ran the killed replica's item: {:?}",
        lines(&runs)
    );
    wait_until(10, "the pool to empty", || {
        waiting(&addr, "tech_pool").is_empty()
    });
    stop(b.take(), dir.path(), "tech-4.log");
    drop(server);
}

/// The pool flow with a slow script that logs `PID MESSAGE_ID` when it starts.
fn flow_slow(dir: &Path, runs: &Path) -> PathBuf {
    let sub = dir.join("slow");
    std::fs::create_dir_all(&sub).unwrap();
    flow(
        &sub,
        "tech",
        &format!("echo \"$PPID $1\" >> {}; sleep 2", runs.display()),
    )
}

/// A flow whose agent `worker_a` runs, for each message, the tool `effect` (appends the message
/// id to `effects`), then `slow` (touches `slow-started`, sleeps 3 s; `idempotent` as given),
/// then replies.
fn two_step_flow(dir: &Path, slow_idempotent: bool) -> PathBuf {
    let effects = dir.join("effects");
    let started = dir.join("slow-started");
    let text = format!(
        r#"name = "effects-test"
mode = "handoffs"
[input]
from = "ops"
text = "unused"

[[tools]]
name = "effect"
kind = "command"
program = "sh"
args = ["-c", "echo \"$1\" >> {effects}", "sh", "{{m}}"]

[[tools]]
name = "slow"
kind = "command"
program = "sh"
args = ["-c", "echo \"$1\" >> {started}; sleep 3", "sh", "{{m}}"]
idempotent = {slow_idempotent}
requires_confirmation = false

[[agents]]
name = "worker_a"
kind = "rule"

[[agents.rules]]
on = "message"
[[agents.rules.then]]
action = "tool"
tool = "effect"
arguments = {{ m = "${{message_id}}" }}
[[agents.rules.then]]
action = "tool"
tool = "slow"
arguments = {{ m = "${{message_id}}" }}
[[agents.rules.then]]
action = "reply"
text = "done ${{message_id}}"
"#,
        effects = effects.display(),
        started = started.display(),
    ) + &server_table();
    let path = dir.join("two-step.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Starts a worker on `flow`, waits until it is inside the slow tool for `id`, kills it with
/// SIGKILL; returns when it is dead.
fn kill_inside_slow_tool(dir: &Path, flow: &Path, addr: &str, id: &str, n: u32, extra: &[&str]) {
    let started = dir.join("slow-started");
    let mut w = Guard(Some(worker(dir, flow, "worker_a", addr, extra, n)));
    wait_until(20, "the slow tool to start", || {
        lines(&started).iter().any(|l| l == id)
    });
    let mut child = w.take();
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_tool_call_that_finished_before_a_kill_is_not_run_again_on_redelivery() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 1);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let flow = two_step_flow(dir.path(), true);
    send(&addr, "worker_a", "m-once-1", "do it");
    kill_inside_slow_tool(dir.path(), &flow, &addr, "m-once-1", 1, &[]);
    assert_eq!(lines(&dir.path().join("effects")), vec!["m-once-1"]);

    // A new worker gets the delivery again: `effect` is answered from the journal, `slow`
    // (idempotent, started but unfinished) runs again, and the reply goes out.
    let mut w = Guard(Some(worker(
        dir.path(),
        &flow,
        "worker_a",
        &addr,
        &["--renew-ms", "300"],
        2,
    )));
    wait_until(30, "the reply", || !waiting(&addr, "ops").is_empty());
    assert_eq!(
        lines(&dir.path().join("effects")),
        vec!["m-once-1"],
        "the side effect ran exactly once"
    );
    assert_eq!(
        lines(&dir.path().join("slow-started")),
        vec!["m-once-1", "m-once-1"],
        "the unfinished idempotent call ran again"
    );
    let replies = waiting(&addr, "ops");
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0]["message"]["content"], "done m-once-1");
    let (status, body) = request(
        &addr,
        "GET",
        "/v1/agents/worker_a/journal/m-once-1",
        &token("worker_a"),
        None,
    );
    assert_eq!(status, 200, "{body}");
    let journal: Value = serde_json::from_str(&body).unwrap();
    let keys: Vec<&str> = journal["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(
        keys.len(),
        5,
        "each call started (once: the re-run of slow finds its start) and done, the outputs: {keys:?}"
    );
    assert!(keys.last().unwrap().starts_with("outputs-"), "{keys:?}");
    let (status, _) = request(
        &addr,
        "GET",
        "/v1/agents/worker_a/journal/m-once-1",
        &token("ops"),
        None,
    );
    assert_eq!(status, 403, "another agent's journal");
    stop(w.take(), dir.path(), "worker_a-2.log");
    drop(server);
}

#[test]
fn a_non_idempotent_call_that_may_have_run_waits_for_a_person_before_it_runs_again() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 1);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let flow = two_step_flow(dir.path(), false);
    send(&addr, "worker_a", "m-risky-1", "do it");
    kill_inside_slow_tool(dir.path(), &flow, &addr, "m-risky-1", 1, &[]);

    let args = [
        "--retries",
        "50",
        "--backoff-ms",
        "200",
        "--max-backoff-ms",
        "400",
    ];
    let mut w = Guard(Some(worker(dir.path(), &flow, "worker_a", &addr, &args, 2)));
    let pending = || {
        let (status, body) = request(&addr, "GET", "/v1/confirmations?state=pending", ADMIN, None);
        assert_eq!(status, 200, "{body}");
        let page: Value = serde_json::from_str(&body).unwrap();
        page["items"].as_array().cloned().unwrap_or_default()
    };
    wait_until(20, "a confirmation for the re-run", || {
        !pending().is_empty()
    });
    // Not run again, no reply, while the person has not decided.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(lines(&dir.path().join("slow-started")), vec!["m-risky-1"]);
    assert!(waiting(&addr, "ops").is_empty());
    let confirmation = &pending()[0];
    assert_eq!(confirmation["tool"], "slow", "{confirmation}");
    let id = confirmation["id"].as_str().unwrap();
    let (status, body) = request(
        &addr,
        "POST",
        &format!("/v1/confirmations/{id}/approve"),
        ADMIN,
        Some(&json!({})),
    );
    assert_eq!(status, 200, "{body}");
    wait_until(30, "the reply", || !waiting(&addr, "ops").is_empty());
    assert_eq!(
        lines(&dir.path().join("slow-started")),
        vec!["m-risky-1", "m-risky-1"],
        "run again once, after the approval"
    );
    assert_eq!(lines(&dir.path().join("effects")), vec!["m-risky-1"]);
    stop(w.take(), dir.path(), "worker_a-2.log");
    drop(server);
}

#[test]
fn a_flow_run_against_the_hub_dead_letters_a_delivery_its_agent_failed_on() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 30);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let flow = flow(dir.path(), "worker_a", "exit 4");
    let out = chorus(
        &[
            "run",
            flow.to_str().unwrap(),
            "--server",
            &format!("http://{addr}"),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{}", common::stderr(&out));
    let letters = dead_letters(&addr);
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0]["queue"], "worker_a");
    assert_eq!(letters[0]["reason"]["kind"], "failed", "{letters:?}");
    assert!(
        waiting(&addr, "worker_a").is_empty(),
        "not left to be delivered again"
    );
    drop(server);
}

#[test]
fn a_wait_for_approval_longer_than_the_ack_wait_keeps_the_lease_and_runs_the_call_once() {
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 1);
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let runs = dir.path().join("runs");
    let flow = flow(
        dir.path(),
        "worker_a",
        &format!("echo \"$1\" >> {}", runs.display()),
    );
    let text = std::fs::read_to_string(&flow).unwrap().replace(
        "kind = \"command\"\n",
        "kind = \"command\"\nrequires_confirmation = true\n",
    );
    std::fs::write(&flow, text).unwrap();
    let args = ["--await-approval", "60", "--renew-ms", "300"];
    let mut w = Guard(Some(worker(dir.path(), &flow, "worker_a", &addr, &args, 1)));
    send(&addr, "worker_a", "m-approve-1", "needs a person");
    let pending = || {
        let (status, body) = request(&addr, "GET", "/v1/confirmations?state=pending", ADMIN, None);
        assert_eq!(status, 200, "{body}");
        let page: Value = serde_json::from_str(&body).unwrap();
        page["items"].as_array().cloned().unwrap_or_default()
    };
    wait_until(20, "the confirmation", || !pending().is_empty());
    // Three ack waits pass while the person decides.
    std::thread::sleep(Duration::from_secs(3));
    assert!(lines(&runs).is_empty(), "not run before the approval");
    assert_eq!(pending().len(), 1, "one halt, not one per redelivery");
    let id = pending()[0]["id"].as_str().unwrap().to_owned();
    let (status, body) = request(
        &addr,
        "POST",
        &format!("/v1/confirmations/{id}/approve"),
        ADMIN,
        Some(&json!({})),
    );
    assert_eq!(status, 200, "{body}");
    wait_until(20, "the reply", || !waiting(&addr, "ops").is_empty());
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        lines(&runs),
        vec!["m-approve-1"],
        "the approved call ran once"
    );
    assert_eq!(waiting(&addr, "ops").len(), 1);
    assert!(waiting(&addr, "worker_a").is_empty());
    let log = stop(w.take(), dir.path(), "worker_a-1.log");
    assert!(log.contains("1 acked, 0 retried"), "{log}");
    drop(server);
}

/// A TCP proxy on 127.0.0.1 to `target` that keeps what the server sent back; [`Proxy::cut`]
/// resets every connection open through it, as a load balancer that drops them would (new ones
/// are still let through). Its threads end with the test process.
struct Proxy {
    addr: String,
    open: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
    /// Every byte the server sent, on every connection.
    down: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl Proxy {
    fn start(target: &str) -> Proxy {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let open: std::sync::Arc<std::sync::Mutex<Vec<TcpStream>>> = std::sync::Arc::default();
        let down: std::sync::Arc<std::sync::Mutex<Vec<u8>>> = std::sync::Arc::default();
        let (target, list, kept) = (target.to_owned(), open.clone(), down.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&target) else {
                    continue;
                };
                let pair = || Some((client.try_clone().ok()?, server.try_clone().ok()?));
                let (Some((c1, s1)), Some((mut c2, mut s2))) = (pair(), pair()) else {
                    continue;
                };
                list.lock().unwrap().extend([c1, s1]);
                let (mut from, mut to) = (client, server);
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Both);
                });
                let kept = kept.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 8192];
                    while let Ok(n @ 1..) = s2.read(&mut buf) {
                        kept.lock().unwrap().extend_from_slice(&buf[..n]);
                        if c2.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = c2.shutdown(Shutdown::Both);
                });
            }
        });
        Proxy { addr, open, down }
    }

    /// Resets every connection open through the proxy, both ways: each end gets an RST once
    /// the copying threads let go.
    fn cut(&self) {
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// How many times the server sent `text`.
    fn sent(&self, text: &str) -> usize {
        let down = self.down.lock().unwrap();
        String::from_utf8_lossy(&down).matches(text).count()
    }
}

/// The value of the counter `name` in the server's `/metrics`.
fn counter(addr: &str, name: &str) -> f64 {
    let (status, text) = request(addr, "GET", "/metrics", ADMIN, None);
    assert_eq!(status, 200, "{text}");
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
}

#[test]
fn a_worker_whose_stream_breaks_resumes_it_without_the_message_it_works_on_sent_again() {
    // The connections are reset while a handler works. The worker reconnects after the
    // server's `retry:` (2.5 s here: half of `hand_back_ms`, room for a loaded machine) with
    // `Last-Event-ID`, and the new stream keeps what the worker read: the message is not sent
    // again. Without the header (the worker before), the server sends what the closed stream
    // held again on the new stream, while the handler still works on it.
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 60);
    let config = dir.path().join("chorus.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("hand_back_ms = 5000\n{text}")).unwrap();
    let server = serve(dir.path());
    let addr = server.addr.clone();
    let proxy = Proxy::start(&addr);
    let runs = dir.path().join("runs");
    let flow = flow(
        dir.path(),
        "worker_a",
        &format!("echo \"$1\" >> {}; sleep 8", runs.display()),
    );
    let mut w = Guard(Some(worker(
        dir.path(),
        &flow,
        "worker_a",
        &proxy.addr,
        &[],
        1,
    )));
    send(&addr, "worker_a", "m-cut", "the line drops");
    wait_until(20, "the handler to start", || !lines(&runs).is_empty());
    assert_eq!(proxy.sent("event: message"), 1);
    proxy.cut();
    wait_until(40, "the reply", || !waiting(&addr, "ops").is_empty());
    assert_eq!(waiting(&addr, "ops")[0]["message"]["content"], "done m-cut");
    wait_until(10, "the ack", || waiting(&addr, "worker_a").is_empty());
    assert_eq!(lines(&runs), vec!["m-cut"], "handled once");
    assert_eq!(
        proxy.sent("event: message"),
        1,
        "sent once: the resumed stream kept what the worker had read"
    );
    assert_eq!(counter(&addr, "chorus_delivered_total"), 1.0);
    assert_eq!(counter(&addr, "chorus_acked_total"), 1.0);
    let log = stop(w.take(), dir.path(), "worker_a-1.log");
    assert!(log.contains("reconnecting"), "the stream did break: {log}");
    drop(server);
}

#[test]
fn a_worker_the_server_refuses_stops_with_exit_1_and_says_why() {
    // `ops` may not read `tech_pool`: the hub answers 403 on the inbox, which no retry mends,
    // so the worker stops at once instead of reconnecting forever.
    let dir = tempfile::tempdir().unwrap();
    server_config(dir.path(), 30);
    let server = serve(dir.path());
    let flow = flow(dir.path(), "ops", "true");
    let mut w = Guard(Some(worker(
        dir.path(),
        &flow,
        "ops",
        &server.addr,
        &["--inbox", "tech_pool"],
        1,
    )));
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = w.0.as_mut().unwrap().try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the refused worker kept running");
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = w.take().wait();
    let log = std::fs::read_to_string(dir.path().join("ops-1.log")).unwrap();
    assert_eq!(status.code(), Some(1), "{log}");
    assert!(log.contains("refused") && log.contains("403"), "{log}");
    drop(server);
}
