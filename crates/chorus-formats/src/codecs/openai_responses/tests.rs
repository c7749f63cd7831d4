//! Golden tests written from the OpenAI Responses API documentation's shapes.

use chorus_core::{ContentPart, Role};
use serde_json::json;

use super::*;
use crate::common::pairing::is_paired;

#[test]
fn a_documented_request_survives_decode_and_encode_unchanged() {
    let request = json!({
        "model": "o4-mini",
        "instructions": "Talk like a pirate.",
        "input": [
            {"role": "user", "content": [
                {"type": "input_text", "text": "What is in this image and the weather in Paris and Lyon?"},
                {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "high"},
                {"type": "input_file", "file_id": "file-abc"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two calls."}], "encrypted_content": "gAAAA"},
            {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
             "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"temp\": 21}"},
            {"type": "function_call_output", "call_id": "call_2", "output": [
                {"type": "input_text", "text": "radar:"},
                {"type": "input_image", "image_url": "https://example.com/radar.png"}]},
            {"type": "item_reference", "id": "msg_0"}
        ],
        "tools": [{"type": "function", "name": "get_weather", "description": "Weather by city",
                   "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "strict": true},
                  {"type": "web_search_preview"}],
        "reasoning": {"effort": "low", "summary": "auto"}
    });
    let conversation = OpenAiResponses::decode(request.clone()).unwrap();
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
    let assistant = &conversation.messages[2];
    assert!(
        matches!(&assistant.parts()[0], ContentPart::Reasoning(r) if r.text == "Two calls." && r.signature.as_deref() == Some("gAAAA"))
    );
    assert_eq!(
        (assistant.text().as_str(), assistant.calls().len()),
        ("Checking.", 2)
    );
    assert!(is_paired(&conversation.messages));
    let out = OpenAiResponses::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value, request);
}

#[test]
fn a_response_output_decodes_with_usage() {
    let response = json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4.1",
        "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hi!", "annotations": []}]}],
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0}}
    });
    let conversation = OpenAiResponses::decode(response.clone()).unwrap();
    let m = &conversation.messages[0];
    assert_eq!((m.text().as_str(), m.id.as_deref()), ("Hi!", Some("msg_1")));
    let usage = m.metadata.as_ref().unwrap().token_usage.as_ref().unwrap();
    assert_eq!(
        (usage.prompt_tokens, usage.total_tokens),
        (Some(5), Some(7))
    );
    // Kept with the reply: a request written from it must not carry the response's id.
    assert_eq!(
        m.metadata.as_ref().unwrap().extra["x-openai-responses"]["id"],
        "resp_1"
    );
}

#[test]
fn chat_messages_become_items() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "name": "alice", "content": "Weather?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_9", "content": "sunny"}]}))
    .unwrap();
    let out = OpenAiResponses::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(
        out.value,
        json!({"input": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "alice: Weather?"},
        {"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_9", "output": "sunny"}]})
    );
    assert_eq!(out.losses.len(), 1);
    assert_eq!(out.losses[0].path, "/messages/1/name");
}

/// The OpenAI Agents SDK's `result.to_input_list()` is a bare list of items, not a request.
#[test]
fn a_bare_item_list_decodes_as_the_input() {
    let items = json!([
        {"role": "user", "content": "Weather in Oslo?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "cold"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Cold.", "annotations": []}]}
    ]);
    let conversation = OpenAiResponses::decode(items).unwrap();
    let roles: Vec<Role> = conversation.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert!(is_paired(&conversation.messages));
    let bad = OpenAiResponses::decode(json!([{"type": "function_call"}])).unwrap_err();
    assert!(bad.pointer.starts_with("/0"), "{bad:?}");
}
