//! Golden tests written from the Anthropic Messages documentation's shapes.

use chorus_core::{ContentPart, Nullable, Role};
use serde_json::json;

use super::*;
use crate::common::pairing::is_paired;
use crate::{NamePolicy, Policy};

#[test]
fn a_documented_request_survives_decode_and_encode_unchanged() {
    let request = json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "system": [{"type": "text", "text": "You are a weather bot.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "Weather in Paris and Lyon? Also this chart:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}, "title": "Report"}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two cities, two calls.", "signature": "EqQBCgIYAhIM"},
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"city": "Lyon"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": [
                    {"type": "text", "text": "21C"},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/radar.png"}}]},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "station offline", "is_error": true},
                {"type": "text", "text": "Thanks, and tomorrow?"}
            ]},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "EmwKAhgB"}, {"type": "text", "text": "Sunny."}]}
        ],
        "tools": [{"name": "get_weather", "description": "Weather by city",
                   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
                   "cache_control": {"type": "ephemeral"}}]
    });
    let conversation = Anthropic::decode(request.clone()).unwrap();
    let roles: Vec<_> = conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::User,
            Role::Assistant
        ]
    );
    assert!(is_paired(&conversation.messages));
    let out = Anthropic::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value, request);
}

#[test]
fn chat_shaped_history_follows_anthropic_rules() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "name": "alice", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
        {"role": "user", "content": [{"type": "text", "text": "And audio?"},
            {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]},
        {"role": "system", "content": "Answer in French."}
    ]}))
    .unwrap();
    let out = Anthropic::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(
        out.value["system"],
        json!([{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Answer in French."}])
    );
    let messages = out.value["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": "alice: Weather in Paris?"})
    );
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}})
    );
    assert_eq!(
        messages[2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "call_1", "content": "{\"temp\": 21}"})
    );
    assert_eq!(
        messages[2]["content"][1],
        json!({"type": "text", "text": "And audio?"})
    );
    assert_eq!(messages.len(), 3);
    let losses: Vec<_> = out
        .losses
        .iter()
        .map(|l| (l.path.as_str(), l.policy))
        .collect();
    assert_eq!(
        losses,
        [
            ("/messages/1/name", Policy::Prefixed),
            ("/messages/4/content/1", Policy::Dropped),
            ("/messages/5", Policy::Moved),
        ]
    );
}

#[test]
fn history_policy_folds_other_agents_turns() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "assistant", "name": "Planner", "content": "Plan: A then B."},
        {"role": "assistant", "name": "Critic", "content": "B first."},
        {"role": "user", "content": "Decide."}]}))
    .unwrap();
    let options = EncodeOptions {
        names: NamePolicy::History,
        ..EncodeOptions::default()
    };
    let out = Anthropic::encode(&conversation, &options).unwrap();
    let messages = out.value["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{messages:?}");
    let text = messages[0]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("<history>\nPlanner: Plan: A then B.\nCritic: B first.\n</history>"),
        "{text}"
    );
    assert_eq!(messages[0]["content"][1]["text"], "Decide.");
    assert!(out.losses.iter().any(|l| l.policy == Policy::Folded));
}

#[test]
fn response_citations_become_anchors_and_come_back() {
    let response = json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": "According to the document, "},
            {"type": "text", "text": "the grass is green", "citations": [{"type": "char_location",
                "cited_text": "The grass is green.", "document_index": 0, "document_title": "Facts",
                "start_char_index": 0, "end_char_index": 20}]}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}
    });
    let conversation = Anthropic::decode(response.clone()).unwrap();
    let m = &conversation.messages[0];
    assert_eq!(
        m.text(),
        "According to the document, the grass is green[cit_01]"
    );
    let metadata = m.metadata.as_ref().unwrap();
    let citation = &metadata.citation_map.as_ref().unwrap()["cit_01"];
    assert_eq!(citation.source_name.as_deref(), Some("Facts"));
    assert_eq!(
        metadata.token_usage.as_ref().unwrap().prompt_tokens,
        Some(10)
    );
    let out = Anthropic::encode(&conversation, &EncodeOptions::default()).unwrap();
    let blocks = &out.value["messages"][0]["content"];
    assert_eq!(blocks[1], response["content"][1]);
    assert!(
        out.losses
            .iter()
            .all(|l| l.path.ends_with("/id") || l.path.ends_with("/metadata")),
        "{:?}",
        out.losses
    );
}

#[test]
fn tool_use_input_becomes_string_arguments() {
    let request = json!({"messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": {"b": 1, "a": [true]}}]}]});
    let conversation = Anthropic::decode(request.clone()).unwrap();
    let call = &conversation.messages[0].calls()[0];
    assert_eq!(call.function.arguments, r#"{"b":1,"a":[true]}"#);
    assert!(matches!(conversation.messages[0].content, Nullable::Null));
    assert!(
        !conversation.messages[0]
            .parts()
            .iter()
            .any(|p| matches!(p, ContentPart::Text(_)))
    );
}

#[test]
fn a_system_role_inside_messages_is_rejected_with_a_hint() {
    let err =
        Anthropic::decode(json!({"messages": [{"role": "system", "content": "x"}]})).unwrap_err();
    assert_eq!(err.pointer, "/messages/0/role");
    assert!(err.hint.is_some());
}

#[test]
fn base64_images_are_rotated_and_url_rotations_reported() {
    use base64::Engine as _;
    let mut png = std::io::Cursor::new(Vec::new());
    image::RgbImage::new(2, 1)
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(png.into_inner());
    let conversation: Conversation = serde_json::from_value(json!({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}"), "rotation": 90}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "rotation": 90}}]}]}))
    .unwrap();
    let out = Anthropic::encode(&conversation, &EncodeOptions::default()).unwrap();
    let sent = out.value["messages"][0]["content"][0]["source"]["data"]
        .as_str()
        .unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(sent)
        .unwrap();
    assert_eq!(
        image::load_from_memory(&bytes)
            .unwrap()
            .to_rgb8()
            .dimensions(),
        (1, 2)
    );
    let policies: Vec<_> = out
        .losses
        .iter()
        .map(|l| (l.path.as_str(), l.policy))
        .collect();
    assert_eq!(
        policies,
        [
            ("/messages/0/content/0/image_url/rotation", Policy::Applied),
            ("/messages/0/content/1/image_url/rotation", Policy::Dropped),
        ]
    );
}
