//! Every semantic check runs whatever else the document carries: a newer minor version, unknown
//! fields (accepted as warnings in a newer minor, errors in the supported one) or an unrelated
//! schema error elsewhere. Each rule is crossed with each variant.

use chorus_core::{Kind, Report, Severity, Validator};
use serde_json::{Value, json};

fn handoff(version: &str) -> Value {
    json!({
        "metadata": {
            "message_id": "0b8f4c1e-2f5d-4c3a-9e1b-7d6a5c4b3a21",
            "timestamp": "2025-01-01T10:00:00Z",
            "protocol_version": version,
            "sender_id": "support_agent",
            "recipient_id": "billing_pool",
            "task_id": "t-1",
            "priority": "MEDIUM"
        },
        "context": { "workflow_state": "NEW", "previous_actions": [] },
        "payload": { "handoff_type": "REQUEST_INFORMATION", "data": { "requested_info_keys": ["plan"] } },
        "instructions": { "failure_handling_strategy": { "retry_count": 1, "escalate_to": "tier_two" } }
    })
}

/// A handoff rule: its name, how it breaks the document, and where the error must point.
type HandoffRule = (&'static str, fn(&mut Value), &'static str);

const HANDOFF_RULES: &[HandoffRule] = &[
    (
        "sender with a space",
        |d| d["metadata"]["sender_id"] = json!("support agent"),
        "/metadata/sender_id",
    ),
    (
        "recipient with a wildcard",
        |d| d["metadata"]["recipient_id"] = json!("billing.*"),
        "/metadata/recipient_id",
    ),
    (
        "recipient list with a subject separator",
        |d| d["metadata"]["recipient_id"] = json!(["billing_pool", "billing.eu"]),
        "/metadata/recipient_id/1",
    ),
    (
        "recipient with a `>` wildcard",
        |d| d["metadata"]["recipient_id"] = json!("billing>"),
        "/metadata/recipient_id",
    ),
    (
        "escalation target with a space",
        |d| d["instructions"]["failure_handling_strategy"]["escalate_to"] = json!("tier two"),
        "/instructions/failure_handling_strategy/escalate_to",
    ),
    (
        "expiry before the timestamp",
        |d| d["metadata"]["expiration_time"] = json!("2025-01-01T09:00:00Z"),
        "/metadata/expiration_time",
    ),
    (
        "expiry at the timestamp",
        |d| d["metadata"]["expiration_time"] = json!("2025-01-01T11:00:00+01:00"),
        "/metadata/expiration_time",
    ),
];

/// A variant: its name, the version it writes, the unknown field it adds (pointer to the parent
/// object, field name), and whether that field alone is an error.
type Variant = (
    &'static str,
    &'static str,
    Option<(&'static str, &'static str)>,
);

const VARIANTS: &[Variant] = &[
    ("same version", "1.0.0", None),
    ("newer minor", "1.4.0", None),
    (
        "newer minor, unknown field in metadata",
        "1.4.0",
        Some(("/metadata", "tenant")),
    ),
    (
        "newer minor, unknown field at the root",
        "1.4.0",
        Some(("", "x_trace")),
    ),
    (
        "newer minor, unknown field in payload",
        "1.4.0",
        Some(("/payload", "schema_url")),
    ),
    (
        "newer minor, unknown field in the data",
        "1.4.0",
        Some(("/payload/data", "locale")),
    ),
    (
        "newer minor, unknown field in instructions",
        "1.7.2",
        Some(("/instructions", "sla")),
    ),
    (
        "same version, unknown field in metadata",
        "1.0.0",
        Some(("/metadata", "tenant")),
    ),
];

fn variant_document((_, version, extra): &Variant) -> Value {
    let mut doc = handoff(version);
    if let Some((parent, field)) = extra {
        doc.pointer_mut(parent).expect("parent exists")[*field] = json!("new in a later minor");
    }
    doc
}

fn errors_at(report: &Report) -> Vec<&str> {
    report.errors().map(|p| p.pointer.as_str()).collect()
}

#[test]
fn every_variant_alone_is_judged_only_by_its_unknown_field() {
    for variant in VARIANTS {
        let (name, version, extra) = variant;
        let report = Validator::standard().validate_value(&variant_document(variant), None);
        let newer = *version != "1.0.0";
        match extra {
            Some((parent, _)) if !newer => assert_eq!(errors_at(&report), [*parent], "{name}"),
            _ => assert!(report.is_valid(), "{name}: {:?}", report.problems),
        }
        if extra.is_some() && newer {
            assert_eq!(report.problems.len(), 1, "{name}: {:?}", report.problems);
            assert_eq!(report.problems[0].severity, Severity::Warning, "{name}");
        }
    }
}

#[test]
fn every_handoff_rule_is_checked_in_every_variant() {
    for variant in VARIANTS {
        for (rule, break_it, pointer) in HANDOFF_RULES {
            let mut doc = variant_document(variant);
            break_it(&mut doc);
            for kind in [None, Some(Kind::Handoff)] {
                let report = Validator::standard().validate_value(&doc, kind);
                assert!(!report.is_valid(), "{rule} / {}: accepted", variant.0);
                let semantic: Vec<_> = report.errors().filter(|p| p.pointer == *pointer).collect();
                assert_eq!(
                    semantic.len(),
                    1,
                    "{rule} / {}: {:?}",
                    variant.0,
                    report.problems
                );
                assert!(
                    semantic[0].message.starts_with("expected "),
                    "{}",
                    semantic[0].message
                );
            }
            let bytes = serde_json::to_vec(&doc).unwrap();
            assert!(
                !Validator::standard()
                    .validate_bytes(&bytes, None)
                    .is_valid(),
                "{rule} / {}: accepted from bytes",
                variant.0
            );
        }
    }
}

/// A conversation rule: its name, the messages, and where the error must point.
type ConversationRule = (&'static str, fn() -> Vec<Value>, &'static str);

fn call(id: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "f", "arguments": arguments}})
}

const CONVERSATION_RULES: &[ConversationRule] = &[
    (
        "tool result without a call id",
        || vec![json!({"role": "tool", "content": "42"})],
        "/messages/0/tool_call_id",
    ),
    (
        "tool calls on a user message",
        || vec![json!({"role": "user", "content": "x", "tool_calls": [call("a", "{}")]})],
        "/messages/0/tool_calls",
    ),
    (
        "arguments that are not JSON",
        || vec![json!({"role": "assistant", "content": null, "tool_calls": [call("a", "{x")]})],
        "/messages/0/tool_calls/0/function/arguments",
    ),
    (
        "a call id used twice",
        || {
            vec![json!({"role": "assistant", "content": null,
                "tool_calls": [call("a", "{}"), call("a", "{}")]})]
        },
        "/messages/0/tool_calls/1/id",
    ),
    (
        "an orphan tool result",
        || vec![json!({"role": "tool", "tool_call_id": "zz", "content": "x"})],
        "/messages/0/tool_call_id",
    ),
    (
        "a call left unanswered",
        || {
            vec![
                json!({"role": "assistant", "content": null, "tool_calls": [call("a", "{}")]}),
                json!({"role": "user", "content": "go on"}),
            ]
        },
        "/messages/0/tool_calls/0",
    ),
    (
        "an anchor without a citation",
        || vec![json!({"role": "assistant", "content": "up 20% [cit_9]"})],
        "/messages/0/content",
    ),
    (
        "an image that does not decode",
        || {
            vec![json!({"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}
            ]})]
        },
        "/messages/0/content/0/image_url/url",
    ),
];

#[test]
fn every_conversation_rule_is_checked_beside_an_unrelated_schema_error() {
    for (rule, messages, pointer) in CONVERSATION_RULES {
        for unrelated in [None, Some(json!({"role": "model", "content": "hi"}))] {
            let mut messages = messages();
            messages.extend(unrelated.clone());
            let conversation = json!({ "messages": messages });
            let report = Validator::standard().validate_value(&conversation, None);
            let at: Vec<_> = errors_at(&report);
            assert!(at.contains(pointer), "{rule} / {unrelated:?}: {at:?}");
            if unrelated.is_some() {
                let role = format!("/messages/{}/role", messages.len() - 1);
                assert!(at.contains(&role.as_str()), "{rule}: {at:?}");
            }
        }
    }
}

#[test]
fn packet_agent_ids_are_checked_beside_an_unrelated_schema_error() {
    let packet = json!({
        "protocol": "harmony_handoff_v1",
        "meta": {"source_agent": "planner v2", "target_agent": "coder.*", "timestamp": "yesterday"},
        "context": {"primary_objective": "x", "status": "in_progress"}
    });
    let report = Validator::standard().validate_value(&packet, None);
    assert_eq!(
        errors_at(&report),
        [
            "/meta/timestamp",
            "/meta/source_agent",
            "/meta/target_agent"
        ]
    );
}

#[test]
fn a_value_the_schema_rejects_is_not_read_again() {
    let mut doc = handoff("1.0.0");
    doc["metadata"].as_object_mut().unwrap().remove("sender_id");
    doc["metadata"]["recipient_id"] = json!(["billing_pool", 7]);
    doc["metadata"]["timestamp"] = json!(12);
    doc["metadata"]["expiration_time"] = json!("2020-01-01T00:00:00Z");
    let report = Validator::standard().validate_value(&doc, None);
    let at = errors_at(&report);
    assert!(at.contains(&"/metadata"), "{at:?}");
    assert!(
        !at.contains(&"/metadata/sender_id"),
        "a missing sender is reported once, as missing: {:?}",
        report.problems
    );
    assert!(
        !at.contains(&"/metadata/expiration_time"),
        "no expiry check against a timestamp that is not one: {:?}",
        report.problems
    );
    assert_eq!(
        report
            .errors()
            .filter(|p| p.pointer.starts_with("/metadata/recipient_id"))
            .count(),
        1,
        "{:?}",
        report.problems
    );
}
