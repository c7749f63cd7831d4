//! `chorus validate` and `chorus schema` through the real binary: output formats and exit codes.

mod common;

use serde_json::Value;

use common::{chorus, repo, stdout};

#[test]
fn valid_files_exit_zero() {
    let output = chorus(
        &[
            "validate",
            "examples/seeds/003-escalation.json",
            "examples/seeds/000-a2-1-tool-call.json",
        ],
        "",
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        stdout(&output),
        "examples/seeds/003-escalation.json: ok (handoff)\nexamples/seeds/000-a2-1-tool-call.json: ok (message)\n"
    );
}

#[test]
fn a_rejected_file_prints_file_pointer_message_and_hint_and_exits_one() {
    let doc = r#"{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]}"#;
    let output = chorus(&["validate", "-"], doc);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(
        text.starts_with("-: /tool_calls/0/function/arguments: expected string, found an object (hint: tool-call `arguments` must be a JSON string"),
        "{text}"
    );
}

#[test]
fn json_output_lists_every_problem_with_its_fields() {
    let output = chorus(
        &[
            "validate",
            "--format",
            "json",
            "examples/seeds/003-python-invalid-escalation.json",
            "examples/seeds/000-a1-audio-part.json",
        ],
        "",
    );
    assert_eq!(output.status.code(), Some(1));
    let rows: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0]["file"],
        "examples/seeds/003-python-invalid-escalation.json"
    );
    assert_eq!(rows[0]["pointer"], "/payload/data/customer_info");
    assert_eq!(rows[0]["severity"], "error");
    assert_eq!(rows[1]["severity"], "warning");
    for key in ["file", "pointer", "message", "hint", "severity"] {
        assert!(rows[1].get(key).is_some(), "{key}");
    }
}

#[test]
fn a_forced_kind_is_used() {
    let output = chorus(
        &[
            "validate",
            "--kind",
            "handoff",
            "examples/seeds/000-a2-1-tool-call.json",
        ],
        "",
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("expected property \"metadata\""));
}

#[test]
fn io_and_usage_errors_exit_two() {
    let missing = chorus(&["validate", "no/such/file.json"], "");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no/such/file.json: cannot read"));
    assert_eq!(
        chorus(&["validate", "--kind", "letter", "-"], "{}")
            .status
            .code(),
        Some(2)
    );
    assert_eq!(chorus(&["validate"], "").status.code(), Some(2));
    assert_eq!(
        chorus(&["validate", "--max-depth", "0", "-"], "{}")
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn malformed_input_is_rejected_not_crashed() {
    for doc in [
        "",
        "{",
        "[1,",
        "{\"role\": \"user\", \"role\": \"tool\"}",
        "\u{0}",
        "null",
    ] {
        let output = chorus(&["validate", "-"], doc);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{doc:?}: {}",
            stdout(&output)
        );
    }
}

#[test]
fn user_data_schemas_are_loaded_from_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("escalation_data.schema.json"),
        r#"{"type": "object", "required": ["ticket"]}"#,
    )
    .unwrap();
    let dir_arg = dir.path().to_str().unwrap();
    let output = chorus(
        &[
            "validate",
            "--schemas",
            dir_arg,
            "examples/seeds/003-escalation.json",
        ],
        "",
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("/payload/data: expected property \"ticket\""));
    std::fs::write(dir.path().join("broken.schema.json"), "{").unwrap();
    assert_eq!(
        chorus(&["validate", "--schemas", dir_arg, "-"], "{}")
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn schema_prints_the_checked_in_schema() {
    for kind in [
        "message",
        "conversation",
        "handoff",
        "harmony-handoff",
        "data",
    ] {
        let output = chorus(&["schema", kind], "");
        assert_eq!(output.status.code(), Some(0));
        let printed: Value = serde_json::from_str(&stdout(&output)).unwrap();
        let file =
            std::fs::read_to_string(repo().join(format!("schemas/{kind}.schema.json"))).unwrap();
        assert_eq!(
            printed,
            serde_json::from_str::<Value>(&file).unwrap(),
            "{kind}"
        );
    }
    let data = chorus(&["schema", "handoff", "--handoff-type", "ESCALATION"], "");
    let schema: Value = serde_json::from_str(&stdout(&data)).unwrap();
    assert_eq!(schema["required"][2], "customer_info");
    assert_eq!(
        chorus(&["schema", "handoff", "--handoff-type", "NOPE"], "")
            .status
            .code(),
        Some(2)
    );
}
