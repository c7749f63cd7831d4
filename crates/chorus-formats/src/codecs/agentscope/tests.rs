//! Golden tests written from AgentScope's Msg and content block shapes (seed 001).

use chorus_core::{ContentPart, Role};
use serde_json::json;

use super::*;
use crate::Policy;
use crate::common::pairing::is_paired;

#[test]
fn a_react_history_survives_decode_and_encode_unchanged() {
    let msgs = json!([
        {"id": "a1", "name": "user", "role": "user", "content": [
            {"type": "text", "text": "What is in this picture and video? Weather in Paris?"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
            {"type": "audio", "source": {"type": "base64", "media_type": "audio/wav", "data": "UklGRg=="}},
            {"type": "video", "source": {"type": "url", "url": "https://example.com/clip.mp4"}}],
         "metadata": null, "timestamp": "2025-12-21 07:33:22.000"},
        {"id": "a2", "name": "Friday", "role": "assistant", "content": [
            {"type": "thinking", "thinking": "Need the weather tool."},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}],
         "metadata": null, "timestamp": "2025-12-21 07:33:23.000"},
        {"id": "a3", "name": "system", "role": "system", "content": [
            {"type": "tool_result", "id": "call_1", "name": "get_weather", "output": [{"type": "text", "text": "21C"}]}],
         "metadata": null, "timestamp": "2025-12-21 07:33:24.000"},
        {"id": "a4", "name": "Friday", "role": "assistant", "content": "A cat; 21C in Paris.",
         "metadata": {"session_id": "s1", "structured": {"ok": true}}, "timestamp": "2025-12-21 07:33:25.000"}
    ]);
    let conversation = AgentScope::decode(msgs.clone()).unwrap();
    let roles: Vec<_> = conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(conversation.messages[1].name.as_deref(), Some("Friday"));
    assert_eq!(
        conversation.messages[2].name.as_deref(),
        Some("get_weather")
    );
    assert!(
        matches!(&conversation.messages[0].parts()[2], ContentPart::Audio(a) if a.input_audio.format == "wav")
    );
    assert!(is_paired(&conversation.messages));
    let out = AgentScope::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value, msgs);
}

#[test]
fn chat_messages_get_names_and_tool_result_blocks() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "name": "Planner", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\":\"x\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "found"}]}))
    .unwrap();
    let out = AgentScope::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(
        out.value,
        json!([
            {"name": "user", "role": "user", "content": "hi"},
            {"name": "Planner", "role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "search", "input": {"q": "x"}}]},
            {"name": "system", "role": "system", "content": [{"type": "tool_result", "id": "c1", "name": "search", "output": "found"}]}
        ])
    );
    let losses: Vec<_> = out
        .losses
        .iter()
        .map(|l| (l.path.as_str(), l.policy))
        .collect();
    assert_eq!(
        losses,
        [
            ("/messages/0/name", Policy::Downgraded),
            ("/messages/2/name", Policy::Downgraded)
        ]
    );
}

#[test]
fn a_msg_without_a_name_is_rejected_with_a_hint() {
    let err = AgentScope::decode(json!({"role": "user", "content": "x"})).unwrap_err();
    assert_eq!(err.pointer, "/name");
    assert!(err.hint.is_some());
}
