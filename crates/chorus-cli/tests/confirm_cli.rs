//! `chorus confirm` through the real binary: a server's confirmations file opened directly, and a
//! running `chorus serve` through its HTTP API; exit codes 0, 1 (refused) and 2 (usage, I/O).

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use chorus_agent::confirm::{Confirmation, ConfirmationState, Confirmations, SqliteConfirmations};
use common::{Served, chorus, code, http, stderr, stdout};
use serde_json::Value;

const ARGS: &str = r#"{"host":"db-1","force":true}"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Runs `chorus ARGS` with CHORUS_ADMIN_TOKEN set to `token` (or unset).
fn chorus_env(args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_chorus"));
    cmd.args(args).env_remove("CHORUS_ADMIN_TOKEN");
    if let Some(t) = token {
        cmd.env("CHORUS_ADMIN_TOKEN", t);
    }
    cmd.output().unwrap()
}

/// The JSON lines of standard output.
fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

#[test]
fn decides_in_a_servers_confirmations_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chorus-confirmations.db");
    let store = SqliteConfirmations::open(&file).unwrap();
    let rt = runtime();
    let pending = rt
        .block_on(store.request(Confirmation::pending(
            "alice",
            "reboot",
            "call-1",
            ARGS,
            Some("task-9".into()),
        )))
        .unwrap();
    let id = pending.id.as_str();
    let spec = format!("sqlite:{}", dir.path().join("chorus.db").display());
    let at = ["--store", spec.as_str()];

    let out = chorus(&[&["confirm", "list"][..], &at].concat(), "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let table = stdout(&out);
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("ID") && header.ends_with("ARGUMENTS"),
        "{table}"
    );
    let row = table.lines().nth(1).expect("one row");
    for part in [id, "pending", "alice", "reboot", "task-9", ARGS] {
        assert!(row.contains(part), "{part} missing from {row:?}");
    }

    let out = chorus(&[&["confirm", "list", "--json"][..], &at].concat(), "");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let long = chorus(
        &[&["confirm", "list", "--format", "json"][..], &at].concat(),
        "",
    );
    assert_eq!(stdout(&long), stdout(&out), "--format json is --json");
    let text = chorus(
        &[&["confirm", "list", "--format", "text"][..], &at].concat(),
        "",
    );
    assert_eq!(stdout(&text), table, "--format text is the default");
    assert_eq!(lines[0]["id"], id);
    assert_eq!(lines[0]["arguments"], ARGS);

    let out = chorus(
        &[&["confirm", "approve", id, "--note", "checked"][..], &at].concat(),
        "",
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!("approved {id}")),
        "{}",
        stdout(&out)
    );
    let stored = rt.block_on(store.get(id)).unwrap().unwrap();
    assert_eq!(stored.state, ConfirmationState::Approved);
    assert_eq!(stored.note.as_deref(), Some("checked"));

    for action in ["approve", "reject"] {
        let out = chorus(&[&["confirm", action, id][..], &at].concat(), "");
        assert_eq!(code(&out), 1, "{action} twice: {}", stdout(&out));
        assert!(
            stderr(&out).contains("already approved"),
            "{}",
            stderr(&out)
        );
    }
    let out = chorus(
        &[&["confirm", "reject", "conf-unknown"][..], &at].concat(),
        "",
    );
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("no confirmation \"conf-unknown\""),
        "{}",
        stderr(&out)
    );

    let out = chorus(&[&["confirm", "list"][..], &at].concat(), "");
    assert_eq!(stdout(&out), "no pending confirmations\n");
    let out = chorus(
        &[
            &["confirm", "list", "--state", "approved", "--json"][..],
            &at,
        ]
        .concat(),
        "",
    );
    assert_eq!(json_lines(&out)[0]["state"], "approved");
    assert_eq!(
        rt.block_on(store.get(id)).unwrap().unwrap().state,
        ConfirmationState::Approved,
        "refused decisions changed nothing"
    );

    let missing = format!("sqlite:{}", dir.path().join("other.db").display());
    for (args, fragment) in [
        (
            vec!["confirm", "list", "--state", "done", "--store", &spec],
            "--state",
        ),
        (vec!["confirm", "list"], "--server"),
        (
            vec![
                "confirm",
                "list",
                "--store",
                &spec,
                "--server",
                "http://127.0.0.1:9",
            ],
            "cannot be used with",
        ),
        (
            vec!["confirm", "list", "--store", &missing],
            "no confirmations file",
        ),
        (vec!["confirm", "list", "--store", "memory"], "--server"),
        (
            vec!["confirm", "approve", "../admin", "--store", &spec],
            "not a confirmation id",
        ),
        (vec!["confirm", "approve", "--store", &spec], "<ID>"),
    ] {
        let out = chorus(&args, "");
        assert_eq!(code(&out), 2, "{args:?}: {}", stdout(&out));
        assert!(
            stderr(&out).contains(fragment),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    assert!(
        !dir.path().join("other-confirmations.db").exists(),
        "nothing created"
    );
}

/// `chorus serve` with agent `alice` holding `agent_token`; the server and its admin token.
fn serve(dir: &Path, agent_token: &str) -> (Served, String) {
    let hash = chorus(&["serve", "--hash-token", agent_token], "");
    let config = dir.join("chorus.toml");
    let toml = format!(
        "[agents.alice]\ntoken_sha256 = \"{}\"\n",
        stdout(&hash).trim()
    );
    std::fs::write(&config, toml).unwrap();
    let mut served = Served::start(dir, &["--config", "chorus.toml"], Stdio::null());
    let admin = served.admin_token();
    (served, admin)
}

/// POSTs `body` with `token`; the status line and the JSON answer.
fn post(addr: &str, path: &str, token: &str, body: &Value) -> (String, Value) {
    let body = body.to_string();
    let answer = http(
        addr,
        &format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    let (head, json) = answer.split_once("\r\n\r\n").unwrap();
    let status = head.lines().next().unwrap().to_owned();
    (status, serde_json::from_str(json).unwrap_or(Value::Null))
}

#[test]
fn decides_on_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let (served, admin) = serve(dir.path(), "alice-secret");
    let (status, created) = post(
        &served.addr,
        "/v1/confirmations",
        "alice-secret",
        &serde_json::json!({"agent": "alice", "tool": "reboot", "call_id": "call-7",
                            "arguments": ARGS, "task_id": "task-7"}),
    );
    assert!(status.contains(" 201 "), "{status} {created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let url = format!("http://{}", served.addr);
    let at = ["--server", url.as_str(), "--admin-token", admin.as_str()];

    let out = chorus(&[&["confirm", "list"][..], &at].concat(), "");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let row = stdout(&out)
        .lines()
        .nth(1)
        .map(str::to_owned)
        .expect("one row");
    for part in [id.as_str(), "pending", "alice", "reboot", "task-7", ARGS] {
        assert!(row.contains(part), "{part} missing from {row:?}");
    }

    // The admin token from the environment.
    let out = chorus_env(&["confirm", "approve", &id, "--server", &url], Some(&admin));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = chorus(
        &[&["confirm", "list", "--state", "all", "--json"][..], &at].concat(),
        "",
    );
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        lines[0]["state"], "approved",
        "the server changed the state"
    );

    let out = chorus(&[&["confirm", "approve", &id][..], &at].concat(), "");
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("already approved"),
        "{}",
        stderr(&out)
    );
    let out = chorus(&[&["confirm", "reject", "conf-nope"][..], &at].concat(), "");
    assert_eq!(code(&out), 1);
    assert!(stderr(&out).contains("no confirmation"), "{}", stderr(&out));

    let out = chorus_env(&["confirm", "list", "--server", &url], None);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("CHORUS_ADMIN_TOKEN"),
        "{}",
        stderr(&out)
    );
    let out = chorus_env(&["confirm", "list", "--server", &url], Some("wrong-token"));
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("401"), "{}", stderr(&out));
}
