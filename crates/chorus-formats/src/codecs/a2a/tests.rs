//! Golden tests written from the A2A specification's Message and Part shapes.

use chorus_core::{ContentPart, Role};
use serde_json::json;

use super::*;

#[test]
fn a_documented_message_survives_decode_and_encode_unchanged() {
    let messages = json!([{
        "kind": "message", "messageId": "9229e770-767c-417b-a0b0-f0741243c589", "role": "user",
        "contextId": "ctx-1", "taskId": "task-1",
        "parts": [
            {"kind": "text", "text": "Summarize this report and the chart."},
            {"kind": "file", "file": {"name": "report.pdf", "mimeType": "application/pdf", "uri": "https://example.com/report.pdf"}},
            {"kind": "file", "file": {"mimeType": "image/png", "bytes": "iVBORw0KGgo="}},
            {"kind": "data", "data": {"deadline": "2025-01-01"}, "metadata": {"source": "form"}}
        ],
        "metadata": {"trace": "t-1"}
    }]);
    let conversation = A2a::decode(messages.clone()).unwrap();
    let m = &conversation.messages[0];
    assert_eq!(
        (m.role, m.id.as_deref()),
        (Role::User, Some("9229e770-767c-417b-a0b0-f0741243c589"))
    );
    let parts = m.parts();
    assert!(
        matches!(&parts[1], ContentPart::File(f) if f.file.url.as_deref() == Some("https://example.com/report.pdf"))
    );
    assert!(
        matches!(&parts[2], ContentPart::Image(i) if i.image_url.url == "data:image/png;base64,iVBORw0KGgo=")
    );
    assert!(matches!(&parts[3], ContentPart::Data(d) if d.data["deadline"] == "2025-01-01"));
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value, messages);
}

#[test]
fn tool_calls_and_names_travel_in_chorus_metadata() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "assistant", "name": "Planner", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": 1}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok", "index": 0}]}]}))
    .unwrap();
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value[0]["role"], "agent");
    assert_eq!(out.value[0]["metadata"]["chorus"]["name"], "Planner");
    assert_eq!(out.value[1]["metadata"]["chorus"]["role"], "tool");
    assert_eq!(A2a::decode(out.value.clone()).unwrap(), conversation);
}

#[test]
fn a_handoff_packet_travels_as_a_data_part() {
    let packet: chorus_core::HandoffPacket = serde_json::from_value(json!({
        "protocol": "harmony_handoff_v1",
        "meta": {"source_agent": "planner_v2", "target_agent": "coder_v1", "timestamp": "2024-03-20T10:00:00Z"},
        "context": {"primary_objective": "Build a snake game", "status": "in_progress",
                    "completed_steps": ["requirements"], "next_immediate_step": "game loop",
                    "constraints": ["comments"], "artifacts": {"design_doc": "s3://x/spec.md"}},
        "history_summary": "2D, not 3D"}))
    .unwrap();
    let conversation = Conversation {
        messages: vec![chorus_core::Message::with_parts(
            Role::Assistant,
            vec![A2a::handoff_part(&packet)],
        )],
        ..Conversation::default()
    };
    let out = A2a::encode(&conversation, &EncodeOptions::default()).unwrap();
    let part = &out.value[0]["parts"][0];
    assert_eq!(
        (part["kind"].as_str(), part["data"]["protocol"].as_str()),
        (Some("data"), Some("harmony_handoff_v1"))
    );
    let back = A2a::decode(out.value.clone()).unwrap();
    assert_eq!(A2a::handoff_packets(&back), [packet]);
}

#[test]
fn an_unknown_role_is_rejected() {
    let err =
        A2a::decode(json!({"kind": "message", "messageId": "m", "role": "robot", "parts": []}))
            .unwrap_err();
    assert_eq!(err.pointer, "/role");
}
