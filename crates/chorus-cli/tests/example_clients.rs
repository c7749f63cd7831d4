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

#[test]
fn the_typescript_client_builds_and_exchanges_an_escalation_and_a_status_update() {
    if !have_programs("the TypeScript client", &["node", "npm"]) {
        return;
    }
    // The client reads ../../seeds/ as in the repository: copy both into the same layout, so that
    // `npm ci` never writes into the source tree.
    let work = tempfile::tempdir().unwrap();
    let client = work.path().join("examples/clients/typescript");
    copy_tree(&repo().join("examples/clients/typescript"), &client);
    copy_tree(
        &repo().join("examples/seeds"),
        &work.path().join("examples/seeds"),
    );
    // The dependencies exactly as package-lock.json pins them, from npm's registry.
    run_in(&client, "npm", &["ci", "--no-audit", "--no-fund"]);
    run_in(&client, "npm", &["run", "build"]);

    let served = serve_examples_config(work.path());
    let mut command = Command::new("node");
    command.arg(client.join("dist/exchange.js"));
    exchange(command, &served.addr);
}
