//! `chorus convert` and `chorus formats` through the real binary: output, loss reports and exit
//! codes (0 ok, 1 input rejected or `--strict` loss, 2 usage or I/O error).

mod common;

use std::process::Output;

use serde_json::{Value, json};

use common::{chorus, stderr, stdout};

/// The loss reports: every stderr line before an `error:` line is one JSON object.
fn losses(output: &Output) -> Vec<Value> {
    stderr(output)
        .lines()
        .take_while(|line| !line.starts_with("error:"))
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

const NAMED: &str = r#"{"messages": [{"role": "user", "name": "alice", "content": "hi"}]}"#;

#[test]
fn a_lossless_conversion_prints_the_target_and_nothing_on_stderr() {
    let input = r#"{"messages": [{"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"}]}"#;
    let output = chorus(
        &["convert", "--from", "openai-chat", "--to", "anthropic", "-"],
        input,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    let value: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        value,
        json!({"system": "Be brief.", "messages": [{"role": "user", "content": "Weather in Paris?"}]})
    );
}

#[test]
fn losses_are_json_lines_on_stderr_with_pointer_and_policy() {
    let output = chorus(
        &["convert", "--from", "openai-chat", "--to", "gemini", "-"],
        NAMED,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        losses(&output),
        [json!({"path": "/messages/0/name", "policy": "prefixed",
                "what": "speaker written as `alice: ` before the text"})]
    );
    let value: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["contents"][0]["parts"][0]["text"], "alice: hi");
}

#[test]
fn names_history_policy_folds_other_speakers() {
    let input = r#"{"messages": [{"role": "user", "name": "alice", "content": "Paris?"},
        {"role": "assistant", "name": "bob", "content": "Lyon."},
        {"role": "assistant", "name": "carol", "content": "Vote."}]}"#;
    let output = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "anthropic",
            "--names",
            "history",
            "-",
        ],
        input,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        losses(&output).iter().any(|l| l["policy"] == "folded"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).contains("<history>"), "{}", stdout(&output));
}

#[test]
fn strict_exits_one_on_a_loss_and_prints_no_output() {
    let output = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "anthropic",
            "--strict",
            "-",
        ],
        NAMED,
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(losses(&output)[0]["path"], "/messages/0/name");
    assert!(
        stderr(&output).contains("error: --strict: anthropic cannot carry 1 item(s)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn strict_passes_when_the_target_carries_everything() {
    let output = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "chorus",
            "--strict",
            "-",
        ],
        NAMED,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(value["messages"][0]["name"], "alice");
}

#[test]
fn rejected_input_exits_one_with_the_json_pointer_and_a_hint() {
    // Object arguments are taken (transformers and Ollama send them); missing ones are not.
    let input = r#"{"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "f"}}]}]}"#;
    let output = chorus(
        &["convert", "--from", "openai-chat", "--to", "gemini", "-"],
        input,
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    let err = stderr(&output);
    assert!(
        err.contains("/messages/0/tool_calls/0/function/arguments"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
}

#[test]
fn invalid_json_exits_one_with_line_and_column() {
    let output = chorus(
        &["convert", "--from", "anthropic", "--to", "gemini", "-"],
        "{\"messages\": [}",
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("at `1:"), "{}", stderr(&output));
}

#[test]
fn an_anthropic_rule_violation_is_rejected_with_its_pointer() {
    let input = r#"{"messages": [{"role": "system", "content": "no"}]}"#;
    let output = chorus(
        &["convert", "--from", "anthropic", "--to", "openai-chat", "-"],
        input,
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("/messages/0/role"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn usage_and_io_errors_exit_two() {
    let unknown = chorus(
        &["convert", "--from", "openai-chat", "--to", "wizard", "-"],
        NAMED,
    );
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("expected one of: chorus, openai-chat"));

    let missing_target = chorus(&["convert", "--from", "openai-chat", "-"], NAMED);
    assert_eq!(missing_target.status.code(), Some(2));

    let bad_switch = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "qwen3",
            "--enable-thinking",
            "maybe",
            "-",
        ],
        NAMED,
    );
    assert_eq!(bad_switch.status.code(), Some(2));

    let missing_file = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "qwen3",
            "/nonexistent/chorus.json",
        ],
        "",
    );
    assert_eq!(missing_file.status.code(), Some(2));
    assert!(stderr(&missing_file).contains("/nonexistent/chorus.json"));
}

#[test]
fn a_file_argument_is_read_like_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("request.json");
    std::fs::write(&path, NAMED).unwrap();
    let from_file = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "gemini",
            path.to_str().unwrap(),
        ],
        "",
    );
    let from_stdin = chorus(
        &["convert", "--from", "openai-chat", "--to", "gemini", "-"],
        NAMED,
    );
    assert_eq!(from_file.status.code(), Some(0));
    assert_eq!(from_file.stdout, from_stdin.stdout);
    assert_eq!(from_file.stderr, from_stdin.stderr);
}

#[test]
fn to_qwen3_prints_the_template_text_with_the_switches() {
    let input = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
    let off = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "qwen3",
            "--add-generation-prompt",
            "--enable-thinking",
            "false",
            "-",
        ],
        input,
    );
    assert_eq!(off.status.code(), Some(0), "{}", stderr(&off));
    assert_eq!(
        stdout(&off),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    );
    let on = chorus(
        &[
            "convert",
            "--from",
            "openai-chat",
            "--to",
            "qwen3",
            "--add-generation-prompt",
            "-",
        ],
        input,
    );
    assert_eq!(
        stdout(&on),
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn qwen3_text_converts_back_to_chat_completions() {
    let text = "<|im_start|>user\nWeather?<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n";
    let output = chorus(
        &["convert", "--from", "qwen3", "--to", "openai-chat", "-"],
        text,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let value: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let call = &value["messages"][1]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(call["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Paris"})
    );
}

#[test]
fn formats_prints_every_capability_table() {
    let text = chorus(&["formats"], "");
    assert_eq!(text.status.code(), Some(0));
    let ids = [
        "chorus",
        "openai-chat",
        "openai-chat-response",
        "openai-responses",
        "anthropic",
        "gemini",
        "qwen3",
        "agentscope",
        "a2a",
        "harmony",
    ];
    for id in ids {
        assert!(
            stdout(&text)
                .lines()
                .any(|l| l.starts_with(&format!("{id}: "))),
            "{id} missing:\n{}",
            stdout(&text)
        );
    }
    let json = chorus(&["formats", "--json"], "");
    assert_eq!(json.status.code(), Some(0));
    let tables: Vec<Value> = serde_json::from_str(&stdout(&json)).unwrap();
    let listed: Vec<&str> = tables
        .iter()
        .map(|t| t["format"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ids);
    assert!(
        tables
            .iter()
            .all(|t| t["roles"].is_array() && t["names"].is_string())
    );
}
