//! The example clients of `examples/clients/` (Python, TypeScript, curl) run as the README says
//! against a real `chorus serve` with `examples/clients/chorus.toml`, and exit 0 after both
//! deliveries: the seed-003 escalation to technical support and its STATUS_UPDATE back.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use common::{have_programs, repo, serve_examples_config};

/// What every client prints last but one: the STATUS_UPDATE arrived back at customer service.
const ARRIVED: &str = "customer service received STATUS_UPDATE IN_PROGRESS";

/// Runs `command` with `CHORUS_URL` pointing at `addr` and checks that it exited 0 after the
/// exchange.
fn exchange(mut command: Command, addr: &str) -> Output {
    let out = command
        .env("CHORUS_URL", format!("http://{addr}"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{command:?}: {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains(ARRIVED), "{stdout}");
    assert!(
        stdout.contains(&format!("http://{addr}/#/task/task-")),
        "{stdout}"
    );
    out
}

/// The Python interpreter to run the client with: `CHORUS_TEST_PYTHON` (which must have httpx),
/// else `python3` when it has httpx.
fn python() -> Option<String> {
    if let Ok(python) = std::env::var("CHORUS_TEST_PYTHON") {
        return Some(python);
    }
    let has_httpx = Command::new("python3")
        .args(["-c", "import httpx"])
        .output()
        .is_ok_and(|o| o.status.success());
    if has_httpx {
        return Some("python3".into());
    }
    let _ = writeln!(
        std::io::stderr(),
        "not run: the Python client needs httpx (set CHORUS_TEST_PYTHON to a venv with it)"
    );
    None
}

#[test]
fn the_python_client_exchanges_an_escalation_and_a_status_update() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let served = serve_examples_config(dir.path());
    let mut command = Command::new(python);
    command.arg(repo().join("examples/clients/python/exchange.py"));
    exchange(command, &served.addr);
}

#[test]
fn the_curl_client_exchanges_an_escalation_and_a_status_update() {
    if !have_programs("the curl client", &["bash", "curl", "jq"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let served = serve_examples_config(dir.path());
    let mut command = Command::new("bash");
    command.arg(repo().join("examples/clients/curl/exchange.sh"));
    exchange(command, &served.addr);
}

/// Copies `from` into `to` (directories whole), leaving out `node_modules` and `dist`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "node_modules" || name == "dist" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &to.join(&name));
        } else {
            std::fs::copy(entry.path(), to.join(&name)).unwrap();
        }
    }
}

/// Runs `program args` in `dir`, failing the test with its output when it fails.
fn run_in(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {:?}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Held by the tests that run Node: the build's `npm ci` and `tsc` take both cores for seconds,
/// and the resume check has half a second (the default `hand_back_ms`, less the `retry:`) to
/// reconnect in.
static NODE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A copy of the TypeScript client under `work` (as in the repository, beside
/// `examples/seeds/`, which it reads), with its dependencies installed exactly as
/// package-lock.json pins them, from npm's registry: `npm ci` never writes into the source tree.
fn typescript_client(work: &Path) -> std::path::PathBuf {
    let client = work.join("examples/clients/typescript");
    copy_tree(&repo().join("examples/clients/typescript"), &client);
    copy_tree(&repo().join("examples/seeds"), &work.join("examples/seeds"));
    run_in(&client, "npm", &["ci", "--no-audit", "--no-fund"]);
    client
}

#[test]
fn the_typescript_client_builds_and_exchanges_an_escalation_and_a_status_update() {
    if !have_programs("the TypeScript client", &["node", "npm"]) {
        return;
    }
    let _node = NODE.lock().unwrap_or_else(|e| e.into_inner());
    let work = tempfile::tempdir().unwrap();
    let client = typescript_client(work.path());
    run_in(&client, "npm", &["run", "build"]);

    let served = serve_examples_config(work.path());
    let mut command = Command::new("node");
    command.arg(client.join("dist/exchange.js"));
    exchange(command, &served.addr);
}

/// npm's `eventsource` (the client's dependency) reads the pool inbox with `max_in_flight=1`;
/// its connection is cut after the first event, and the handler of that message takes 3.5 s.
/// The package reconnects on its own with `Last-Event-ID`, after the `retry:` the server sets
/// (its own default, 3 s, is past the server's one-second wait before a closed stream's
/// deliveries go back to the store). Every message is delivered once, the first one is not sent
/// again while its handler works, the next comes only after its ack (the resumed stream holds
/// it for the client), and every ack answers 204. (`tests/clients/resume.mjs`.)
#[test]
fn the_eventsource_package_resumes_an_inbox_stream_without_a_second_delivery() {
    if !have_programs("the eventsource resume check", &["node", "npm"]) {
        return;
    }
    let _node = NODE.lock().unwrap_or_else(|e| e.into_inner());
    let work = tempfile::tempdir().unwrap();
    let client = typescript_client(work.path());
    std::fs::copy(
        repo().join("crates/chorus-cli/tests/clients/resume.mjs"),
        client.join("resume.mjs"),
    )
    .unwrap();
    let served = serve_examples_config(work.path());
    let out = Command::new("node")
        .arg("resume.mjs")
        .current_dir(&client)
        .env("CHORUS_URL", format!("http://{}", served.addr))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
    let deliveries = report["deliveries"].as_array().unwrap();
    let ids: Vec<&str> = deliveries
        .iter()
        .map(|d| d["message_id"].as_str().unwrap())
        .collect();
    let unique: std::collections::BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(
        (ids.len(), unique.len()),
        (3, 3),
        "each message delivered once: {report}"
    );
    assert!(
        deliveries.iter().all(|d| d["attempt"] == 1),
        "no delivery came again as a new attempt: {report}"
    );
    assert!(
        report["acks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["status"] == 204),
        "{report}"
    );
    // One at a time (`max_in_flight=1`): the resumed stream kept the first message for its
    // client, so the next came only after that message's ack was sent.
    let order: Vec<String> = ids
        .iter()
        .flat_map(|id| [format!("deliver {id}"), format!("ack {id}")])
        .collect();
    assert_eq!(report["order"], serde_json::json!(order), "{report}");
    // The package did reconnect, and resumed from the event it had read.
    let connections = report["connections"].as_array().unwrap();
    assert_eq!(connections.len(), 2, "{report}");
    assert_eq!(connections[0]["last_event_id"], serde_json::Value::Null);
    assert_eq!(
        connections[1]["last_event_id"], report["events"][0],
        "{report}"
    );
}
