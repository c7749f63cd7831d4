//! A2A with the official A2A Python SDK (`a2a-sdk` from PyPI) as the peer, on 127.0.0.1: its
//! client drives a chorus agent (`chorus agent run examples/a2a/desk.toml` on `chorus serve`)
//! through `examples/a2a/sdk_client.py`: resolve the card, stream a message to `completed`, get
//! the task, subscribe to a second task and cancel it. The script parses every answer strictly
//! (unknown fields refused, the SDK's required-field check).
//!
//! Needs `CHORUS_TEST_PYTHON` (a python with `a2a-sdk` installed, as `.ci/run` sets it); without
//! it the tests say "not run: …"; with it and no `a2a-sdk` they fail.

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use common::{Served, repo};
use serde_json::Value;

/// The Python of `CHORUS_TEST_PYTHON` when it has the A2A SDK; `None` (after saying "not run")
/// when the variable is unset.
fn python() -> Option<PathBuf> {
    let Some(python) = std::env::var_os("CHORUS_TEST_PYTHON") else {
        // Straight to stderr: the test harness would hide eprintln! of a passing test.
        let _ = writeln!(
            std::io::stderr(),
            "\n*** not run: CHORUS_TEST_PYTHON is not set (the A2A peer is the a2a-sdk SDK) ***\n"
        );
        return None;
    };
    let has_sdk = Command::new(&python)
        .args(["-c", "import a2a.client, a2a.server.routes"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        has_sdk,
        "CHORUS_TEST_PYTHON={} cannot import a2a-sdk; install it: pip install -r .ci/python-oracles.txt",
        python.to_string_lossy()
    );
    Some(PathBuf::from(python))
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `chorus serve` with the examples' A2A hub config, on a free port.
fn serve(dir: &std::path::Path) -> Served {
    let config = repo().join("examples/a2a/chorus.toml");
    let mut served = Served::start(
        dir,
        &["--store", "memory", "--config", config.to_str().unwrap()],
        Stdio::null(),
    );
    served.keep_reading();
    served
}

#[test]
fn the_a2a_sdk_client_drives_a_chorus_agent_to_completed_and_cancels_a_task() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path());
    let log = std::fs::File::create(dir.path().join("desk.log")).unwrap();
    let _desk = Killed(
        Command::new(env!("CARGO_BIN_EXE_chorus"))
            .args(["agent", "run"])
            .arg(repo().join("examples/a2a/desk.toml"))
            .args([
                "--agent",
                "desk",
                "--server",
                &format!("http://{}", served.addr),
            ])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
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
}
