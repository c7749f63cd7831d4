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
            "examples/seeds/invalid/003-python-invalid-escalation.json",
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
        "examples/seeds/invalid/003-python-invalid-escalation.json"
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

/// A handoff whose sender contains a space, on one line.
fn bad_sender_handoff() -> String {
    let mut doc: Value = serde_json::from_slice(
        &std::fs::read(common::repo().join("examples/seeds/003-escalation.json")).unwrap(),
    )
    .unwrap();
    doc["metadata"]["sender_id"] = "support agent".into();
    doc.to_string()
}

#[test]
fn the_transcript_of_a_run_validates_line_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t.jsonl");
    let transcript = transcript.to_str().unwrap();
    let run = chorus(
        &[
            "run",
            "examples/support-desk.toml",
            "--transcript",
            transcript,
        ],
        "",
    );
    assert_eq!(run.status.code(), Some(0), "{}", common::stderr(&run));
    let lines = std::fs::read_to_string(transcript).unwrap().lines().count();
    assert!(lines > 5, "{lines} lines");

    let output = chorus(&["validate", transcript], "");
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let text = stdout(&output);
    let reported: Vec<&str> = text.lines().collect();
    assert_eq!(reported.len(), lines, "{text}");
    for (i, line) in reported.iter().enumerate() {
        let kind = line
            .strip_prefix(&format!("{transcript}:{}: ok (", i + 1))
            .unwrap_or_else(|| panic!("{line}"));
        assert!(kind == "message)" || kind == "handoff)", "{line}");
    }
    assert!(text.contains("ok (handoff)") && text.contains("ok (message)"));

    let piped = std::fs::read_to_string(transcript).unwrap();
    let output = chorus(&["validate", "--jsonl", "-"], &piped);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(stdout(&output).lines().count(), lines);
    assert!(stdout(&output).starts_with("-:1: ok (message)\n"));
}

#[test]
fn json_lines_problems_name_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"role": "user", "content": "hi"}"#;
    let text = format!(
        "{good}\n\n{}\r\n{{\"role\": \"user\",\n{good}\n",
        bad_sender_handoff()
    );
    std::fs::write(dir.path().join("mixed.jsonl"), &text).unwrap();
    std::fs::write(dir.path().join("mixed.log"), &text).unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();

    let output = chorus(&["validate", &path("mixed.jsonl")], "");
    assert_eq!(output.status.code(), Some(1));
    let out = stdout(&output);
    let file = path("mixed.jsonl");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(lines[0], format!("{file}:1: ok (message)"));
    assert!(
        lines[1].starts_with(&format!(
            "{file}:3: /metadata/sender_id: expected an id usable for routing"
        )),
        "{out}"
    );
    assert!(
        lines[2].starts_with(&format!("{file}:4: (root): expected more JSON")),
        "{out}"
    );
    assert_eq!(lines[3], format!("{file}:5: ok (message)"));

    let output = chorus(&["validate", "--format", "json", &file], "");
    assert_eq!(output.status.code(), Some(1));
    let rows: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let at: Vec<(u64, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["line"].as_u64().unwrap(), r["pointer"].as_str().unwrap()))
        .collect();
    assert_eq!(at, [(3, "/metadata/sender_id"), (4, "")]);

    let other_name = chorus(&["validate", &path("mixed.log")], "");
    assert_eq!(other_name.status.code(), Some(1));
    assert!(
        stdout(&other_name).starts_with(&format!(
            "{}: (root): expected valid JSON",
            path("mixed.log")
        )),
        "without --jsonl another name is one document: {}",
        stdout(&other_name)
    );
    let forced = chorus(&["validate", "--jsonl", &path("mixed.log")], "");
    assert_eq!(forced.status.code(), Some(1));
    assert_eq!(stdout(&forced).replace("mixed.log", "mixed.jsonl"), out);
}

#[test]
fn an_empty_json_lines_file_has_no_documents() {
    let output = chorus(&["validate", "--jsonl", "-"], "\n  \n");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "-: ok (no documents)\n");
}
