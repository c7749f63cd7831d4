//! Behaviour of the validator through the public API: each rule rejects what it must, with the
//! pointer, the expectation and a hint, and accepts what it must.

use chorus_core::validate::Limits;
use chorus_core::{Kind, Problem, Report, Severity, Validator};
use serde_json::{Value, json};

fn check(value: Value, kind: Kind) -> Report {
    Validator::standard().validate_value(&value, Some(kind))
}

fn errors(report: &Report) -> Vec<&Problem> {
    report.errors().collect()
}

fn handoff() -> Value {
    json!({
        "metadata": {
            "message_id": "0b8f4c1e-2f5d-4c3a-9e1b-7d6a5c4b3a21",
            "timestamp": "2025-01-01T10:00:00Z",
            "protocol_version": "1.0.0",
            "sender_id": "support_agent",
            "recipient_id": "billing_pool",
            "task_id": "t-1",
            "priority": "MEDIUM"
        },
        "context": { "workflow_state": "NEW", "previous_actions": [] },
        "payload": { "handoff_type": "REQUEST_INFORMATION", "data": { "requested_info_keys": ["plan"] } },
        "instructions": {}
    })
}

#[test]
fn arguments_given_as_an_object_get_the_gotcha_hint() {
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}
    ]});
    let report = check(message, Kind::Message);
    let errors = errors(&report);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].pointer, "/tool_calls/0/function/arguments");
    assert!(
        errors[0]
            .message
            .contains("expected string, found an object"),
        "{}",
        errors[0].message
    );
    assert!(errors[0].hint.as_deref().unwrap().contains("JSON string"));
}

#[test]
fn arguments_that_are_not_json_are_rejected() {
    let message = json!({"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{x: 1"}}
    ]});
    let report = check(message, Kind::Message);
    assert_eq!(
        errors(&report)[0].pointer,
        "/tool_calls/0/function/arguments"
    );
    assert!(errors(&report)[0].message.contains("invalid JSON"));
}

#[test]
fn wrong_roles_and_types_name_what_was_found() {
    let report = check(json!({"role": "model", "content": 5}), Kind::Message);
    let pointers: Vec<_> = errors(&report).iter().map(|p| p.pointer.clone()).collect();
    assert!(
        pointers.contains(&"/role".to_owned()) && pointers.contains(&"/content".to_owned()),
        "{pointers:?}"
    );
    let role = errors(&report)
        .into_iter()
        .find(|p| p.pointer == "/role")
        .unwrap()
        .clone();
    assert!(role.message.contains("\"model\""));
    assert_eq!(
        role.hint.as_deref(),
        Some("Gemini's `model` role is `assistant` here")
    );
}

#[test]
fn a_tool_message_must_name_its_call() {
    let report = check(json!({"role": "tool", "content": "42"}), Kind::Message);
    assert_eq!(errors(&report)[0].pointer, "/tool_call_id");
}

#[test]
fn tool_pairing_is_checked_across_a_conversation() {
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    let conversation = json!({"messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "ok"},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
        {"role": "assistant", "content": null, "tool_calls": [call("c")]},
        {"role": "user", "content": "never mind"},
        {"role": "assistant", "content": null, "tool_calls": [call("d")]}
    ]});
    let report = check(conversation, Kind::Conversation);
    let found: Vec<(String, Severity)> = report
        .problems
        .iter()
        .map(|p| (p.pointer.clone(), p.severity))
        .collect();
    assert_eq!(
        found,
        [
            ("/messages/4/tool_call_id".to_owned(), Severity::Error),
            ("/messages/5/tool_calls/0".to_owned(), Severity::Error),
            ("/messages/7/tool_calls/0".to_owned(), Severity::Warning),
        ]
    );
}

#[test]
fn citation_anchors_must_resolve() {
    let message = json!({"role": "assistant", "content": "Up 20% [cit_01], cloud [cit_09].",
        "metadata": {"citation_map": {"cit_01": {"source_type": "pdf_document"}}}});
    let report = check(message, Kind::Message);
    let errors = errors(&report);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].pointer, "/content");
    assert!(errors[0].message.contains("[cit_09]"));
}

#[test]
fn data_urls_and_audio_must_decode() {
    let message = json!({"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}},
        {"type": "input_audio", "input_audio": {"data": "not base64!", "format": "wav"}}
    ]});
    let report = check(message, Kind::Message);
    let pointers: Vec<_> = errors(&report).iter().map(|p| p.pointer.clone()).collect();
    assert_eq!(
        pointers,
        ["/content/1/image_url/url", "/content/2/input_audio/data"]
    );
}

#[test]
fn unknown_part_types_and_fields_are_accepted() {
    let message = json!({"role": "user", "x_trace": {"a": 1}, "content": [
        {"type": "hologram", "payload": [1, 2]},
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    ]});
    assert!(check(message, Kind::Message).is_valid());
}

#[test]
fn known_part_types_are_checked_inside() {
    let message =
        json!({"role": "user", "content": [{"type": "image_url", "image_url": "https://x/y.png"}]});
    let report = check(message, Kind::Message);
    let errors = errors(&report);
    assert_eq!(errors[0].pointer, "/content/0/image_url");
    assert!(errors[0].hint.as_deref().unwrap().contains("{\"url\""));
}

#[test]
fn expiry_must_follow_the_timestamp() {
    let mut doc = handoff();
    doc["metadata"]["expiration_time"] = json!("2025-01-01T09:00:00Z");
    let report = check(doc, Kind::Handoff);
    assert_eq!(errors(&report)[0].pointer, "/metadata/expiration_time");
}

#[test]
fn routing_ids_reject_wildcards() {
    let mut doc = handoff();
    doc["metadata"]["recipient_id"] = json!(["billing_pool", "billing.*"]);
    let report = check(doc, Kind::Handoff);
    assert_eq!(errors(&report)[0].pointer, "/metadata/recipient_id/1");
}

#[test]
fn another_major_version_is_rejected_naming_the_supported_one() {
    let mut doc = handoff();
    doc["metadata"]["protocol_version"] = json!("2.0.0");
    let report = check(doc, Kind::Handoff);
    let errors = errors(&report);
    assert_eq!(errors[0].pointer, "/metadata/protocol_version");
    assert!(errors[0].message.contains("1.x.y"), "{}", errors[0].message);
}

#[test]
fn a_newer_minor_version_with_new_fields_is_accepted_with_warnings() {
    let mut doc = handoff();
    doc["metadata"]["protocol_version"] = json!("1.4.0");
    doc["metadata"]["tenant"] = json!("acme");
    let report = check(doc.clone(), Kind::Handoff);
    assert!(report.is_valid(), "{:?}", report.problems);
    assert_eq!(report.problems[0].severity, Severity::Warning);
    doc["metadata"]["protocol_version"] = json!("1.0.0");
    assert!(
        !check(doc, Kind::Handoff).is_valid(),
        "the same field is an error in 1.0.0"
    );
}

#[test]
fn the_seed_schema_typo_is_read_as_minimum() {
    let mut doc = handoff();
    doc["instructions"]["failure_handling_strategy"] = json!({"retry_count": -1});
    let report = check(doc, Kind::Handoff);
    assert_eq!(
        errors(&report)[0].pointer,
        "/instructions/failure_handling_strategy/retry_count"
    );
}

#[test]
fn each_standard_type_has_a_data_schema() {
    let cases = [
        (
            "TASK_TRANSFER",
            json!({"task_description": "ship it"}),
            json!({"status": "x"}),
        ),
        (
            "PROVIDE_INFORMATION",
            json!({"provided_info": {"plan": "pro"}}),
            json!({"info": 1}),
        ),
        (
            "NOTIFICATION",
            json!({"event_type": "DONE", "message": "ok"}),
            json!({"event_type": "DONE"}),
        ),
        (
            "STATUS_UPDATE",
            json!({"status": "IN_PROGRESS", "progress_percent": 40}),
            json!({"status": "ALMOST"}),
        ),
        (
            "APPROVAL_REQUEST",
            json!({"action": "REFUND", "reason": "broken"}),
            json!({"action": "REFUND"}),
        ),
    ];
    for (name, good, bad) in cases {
        let mut doc = handoff();
        doc["payload"] = json!({"handoff_type": name, "data": good});
        assert!(check(doc.clone(), Kind::Handoff).is_valid(), "{name}");
        doc["payload"]["data"] = bad;
        let report = check(doc, Kind::Handoff);
        assert!(
            errors(&report)
                .iter()
                .all(|p| p.pointer.starts_with("/payload/data")),
            "{name}: {:?}",
            report.problems
        );
        assert!(!report.is_valid(), "{name}");
    }
}

#[test]
fn users_register_data_schemas_from_a_directory() {
    let dir = std::env::temp_dir().join(format!("chorus-schemas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let schema = json!({"type": "object", "required": ["invoice_id"], "properties": {"invoice_id": {"type": "string"}}});
    std::fs::write(
        dir.join("invoice_dispute_data.schema.json"),
        schema.to_string(),
    )
    .unwrap();
    let mut validator = Validator::new();
    assert_eq!(
        validator.load_data_schema_dir(&dir).unwrap(),
        ["INVOICE_DISPUTE"]
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let mut doc = handoff();
    doc["payload"] = json!({"handoff_type": "INVOICE_DISPUTE", "data": {"invoice_id": "A-7"}});
    assert!(
        !check(doc.clone(), Kind::Handoff).is_valid(),
        "unknown to the standard validator"
    );
    assert!(
        validator
            .validate_value(&doc, Some(Kind::Handoff))
            .is_valid()
    );
    doc["payload"]["data"] = json!({});
    let report = validator.validate_value(&doc, Some(Kind::Handoff));
    assert_eq!(errors(&report)[0].pointer, "/payload/data");
}

#[test]
fn limits_are_configurable() {
    let validator = Validator::new().with_limits(Limits {
        max_depth: 3,
        max_bytes: 1000,
    });
    let report = validator.validate_bytes(
        br#"{"role": "user", "content": [{"type": "data", "data": {"a": {}}}]}"#,
        None,
    );
    assert!(errors(&report)[0].message.contains("at most 3 levels"));
    let big = format!(r#"{{"role": "user", "content": "{}"}}"#, "x".repeat(2000));
    assert!(
        errors(&validator.validate_bytes(big.as_bytes(), None))[0]
            .message
            .contains("at most 1000 bytes")
    );
}

#[test]
fn data_parts_with_a_broken_schema_are_rejected() {
    let part =
        json!({"type": "data", "kind": "user", "data": {}, "schema": {"type": "no-such-type"}});
    let report = check(part, Kind::Data);
    assert_eq!(errors(&report)[0].pointer, "/schema");
    let patch = json!({"type": "data", "kind": "user", "data": {"age": "thirty"},
        "schema": {"type": "object", "properties": {"age": {"type": "number"}}}});
    let report = check(patch, Kind::Data);
    assert!(report.is_valid());
    assert_eq!(report.problems[0].pointer, "/data/age");
}

/// Every problem a schema finds says how to fix it, a known mistake's hint or else the broken
/// rule's own (before, a missing property, an unknown one, a bad type or format had
/// `"hint": null` although the README promises a hint for every error).
#[test]
fn every_schema_problem_has_a_hint() {
    let mut missing = handoff();
    missing["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("sender_id");
    let mut unknown = handoff();
    unknown["metadata"]["sendr_id"] = json!("x");
    let mut wrong_type = handoff();
    wrong_type["context"]["previous_actions"] = json!("none");
    let mut bad_format = handoff();
    bad_format["metadata"]["timestamp"] = json!("yesterday");
    let mut data = handoff();
    data["payload"]["data"] = json!({});
    let cases = [
        (missing, "add \"sender_id\" to this object"),
        (unknown, "remove it or correct its spelling"),
        (wrong_type, "give an array here"),
        (bad_format, "RFC 3339"),
        (data, "add \"requested_info_keys\""),
    ];
    for (document, expected) in cases {
        let report = check(document, Kind::Handoff);
        let errors = errors(&report);
        assert!(!errors.is_empty());
        for e in &errors {
            let hint = e
                .hint
                .as_deref()
                .unwrap_or_else(|| panic!("no hint: {e:?}"));
            assert!(!hint.is_empty(), "{e:?}");
        }
        assert!(
            errors
                .iter()
                .any(|e| e.hint.as_deref().unwrap().contains(expected)),
            "{expected:?} in {errors:?}"
        );
    }
}

/// The semantic checks and the JSON reader give a hint with every problem too: tool calls on a
/// user message, a call id twice in a message and again later, a second result, an orphan
/// result, a call left unanswered, a call the conversation ends waiting for, and text that is
/// not JSON.
#[test]
fn every_semantic_and_syntax_problem_has_a_hint() {
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}});
    let conversation = json!({"messages": [
        {"role": "user", "content": "go", "tool_calls": [call("u")]},
        {"role": "assistant", "content": null, "tool_calls": [call("a"), call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "tool", "tool_call_id": "a", "content": "again"},
        {"role": "tool", "tool_call_id": "zzz", "content": "orphan"},
        {"role": "assistant", "content": null, "tool_calls": [call("a"), call("c")]},
        {"role": "user", "content": "never mind"},
        {"role": "assistant", "content": null, "tool_calls": [call("d")]}
    ]});
    let mut problems = check(conversation, Kind::Conversation).problems;
    problems.extend(
        Validator::standard()
            .validate_bytes(b"{\"role\": \"user\" \"content\": 1}", Some(Kind::Message))
            .problems,
    );
    assert!(problems.len() >= 7, "{problems:?}");
    for p in &problems {
        assert!(
            p.hint.as_deref().is_some_and(|h| !h.is_empty()),
            "no hint: {p:?}"
        );
    }
}
