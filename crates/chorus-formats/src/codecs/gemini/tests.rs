//! Golden tests written from the Gemini API documentation's shapes.

use chorus_core::{ContentPart, Role};
use serde_json::json;

use super::*;
use crate::Policy;
use crate::common::pairing::is_paired;

#[test]
fn a_documented_request_survives_decode_and_encode_unchanged() {
    let request = json!({
        "system_instruction": {"parts": [{"text": "You are a cat. Your name is Neko."}]},
        "contents": [
            {"role": "user", "parts": [
                {"text": "What is in this picture, and the weather in Paris and Lyon?"},
                {"inline_data": {"mime_type": "image/jpeg", "data": "/9j/4AAQSkZJRg=="}},
                {"file_data": {"mime_type": "application/pdf", "file_uri": "gs://bucket/report.pdf"}},
                {"inline_data": {"mime_type": "audio/mp3", "data": "SUQz"}}
            ]},
            {"role": "model", "parts": [
                {"text": "Two lookups.", "thought": true, "thought_signature": "c2ln"},
                {"function_call": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"function_call": {"name": "get_weather", "args": {"city": "Lyon"}}}
            ]},
            {"role": "user", "parts": [
                {"function_response": {"name": "get_weather", "response": {"temp": 21}}},
                {"function_response": {"name": "get_weather", "response": {"error": "station offline"}}}
            ]},
            {"role": "model", "parts": [{"text": "A cat; 21 degrees in Paris."}, {"executable_code": {"language": "PYTHON", "code": "print(1)"}}]}
        ],
        "tools": [{"function_declarations": [{"name": "get_weather", "description": "Weather by city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}, {"google_search": {}}],
        "generation_config": {"temperature": 0.1, "thinking_config": {"include_thoughts": true}}
    });
    let conversation = Gemini::decode(request.clone()).unwrap();
    let roles: Vec<_> = conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert!(is_paired(&conversation.messages));
    assert_eq!(
        conversation.messages[3].tool_call_id.as_deref(),
        Some("call_0")
    );
    assert_eq!(
        conversation.messages[4].text(),
        "{\"error\":\"station offline\"}"
    );
    assert!(
        matches!(&conversation.messages[1].parts()[3], ContentPart::Audio(a) if a.input_audio.format == "mp3")
    );
    let out = Gemini::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value, request);
}

#[test]
fn camel_case_responses_decode_with_usage() {
    let response = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Hi!"}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 2, "totalTokenCount": 6},
        "modelVersion": "gemini-2.5-flash", "responseId": "r1"
    });
    let conversation = Gemini::decode(response.clone()).unwrap();
    let m = &conversation.messages[0];
    assert_eq!(
        (m.role, m.text().as_str(), m.id.as_deref()),
        (Role::Assistant, "Hi!", Some("r1"))
    );
    let metadata = m.metadata.as_ref().unwrap();
    assert_eq!(metadata.token_usage.as_ref().unwrap().total_tokens, Some(6));
    assert_eq!(metadata.extra["x-gemini"]["finishReason"], "STOP");
}

#[test]
fn chat_tool_results_become_function_responses() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_abc", "content": "21 degrees"}
    ]}))
    .unwrap();
    let out = Gemini::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(
        out.value["contents"][1]["parts"][0],
        json!({"function_call": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_abc"}})
    );
    assert_eq!(
        out.value["contents"][2],
        json!({"role": "user", "parts": [{"function_response": {"name": "get_weather", "response": {"result": "21 degrees"}, "id": "call_abc"}}]})
    );
    let policies: Vec<_> = out
        .losses
        .iter()
        .map(|l| (l.path.as_str(), l.policy))
        .collect();
    assert_eq!(
        policies,
        [
            ("/messages/2/name", Policy::Downgraded),
            ("/messages/2/content", Policy::Downgraded)
        ]
    );
    let back = Gemini::decode(out.value.clone()).unwrap();
    assert!(is_paired(&back.messages));
}

#[test]
fn a_response_without_its_call_is_rejected() {
    let request = json!({"contents": [{"role": "user", "parts": [{"function_response": {"name": "f", "response": {}}}]}]});
    let err = Gemini::decode(request.clone()).unwrap_err();
    assert_eq!(err.pointer, "/contents/0/parts/0/function_response");
}

/// A tool result in two text blocks is two lines of the function response, not one glued
/// word ("Sunny" + "22 degrees" was "Sunny22 degrees").
#[test]
fn a_result_in_text_blocks_keeps_them_apart() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_abc", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_abc", "content": [
            {"type": "text", "text": "Sunny"}, {"type": "text", "text": "22 degrees"}]}
    ]}))
    .unwrap();
    let out = Gemini::encode(&conversation, &EncodeOptions::default()).unwrap();
    let response = &out.value["contents"][2]["parts"][0]["function_response"]["response"];
    assert_eq!(response["result"], "Sunny\n22 degrees", "{response}");
}
