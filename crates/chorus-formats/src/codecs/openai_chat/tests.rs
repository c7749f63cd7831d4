//! Golden tests written from the Chat Completions documentation's shapes.

use chorus_core::{Content, ContentPart, Role};
use serde_json::{Value, json};

use super::*;
use crate::Policy;

fn roundtrip(request: Value) -> Encoded<Value> {
    let conversation = OpenAiChat::decode(request).unwrap();
    OpenAiChat::encode(&conversation, &EncodeOptions::default()).unwrap()
}

#[test]
fn a_documented_request_survives_decode_and_encode_unchanged() {
    let request = json!({
        "model": "gpt-4o",
        "temperature": 0.2,
        "tool_choice": "auto",
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "name": "alice", "content": [
                {"type": "text", "text": "What is in this image, and what is the weather in Paris?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png", "detail": "low"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-abc", "filename": "report.pdf"}}
            ]},
            {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Lyon\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "{\"status\": \"error\", \"error_type\": \"Timeout\", \"message\": \"retry\"}"},
            {"role": "assistant", "content": "A cat; 21 degrees in Paris."}
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather by city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    });
    let out = roundtrip(request.clone());
    assert_eq!(out.losses, []);
    assert_eq!(out.value, request);
}

#[test]
fn images_returned_by_a_tool_move_to_a_user_message_after_the_tool_run() {
    let request = json!({"messages": [
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_render_chart", "type": "function", "function": {"name": "render", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "render", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_render_chart", "content": [
            {"type": "text", "text": "{\"status\": \"rendered_successfully\"}"},
            {"type": "image_url", "image_url": {"url": "https://example.com/chart_temp.png"}}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "done"}
    ]});
    let out = roundtrip(request);
    let messages = out.value["messages"].as_array().unwrap();
    let roles: Vec<_> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["assistant", "tool", "tool", "user"]);
    assert_eq!(
        messages[1]["content"],
        json!([{"type": "text", "text": "{\"status\": \"rendered_successfully\"}"}])
    );
    assert_eq!(
        messages[3]["content"][1]["image_url"]["url"],
        "https://example.com/chart_temp.png"
    );
    assert_eq!(out.losses.len(), 1);
    assert_eq!(out.losses[0].path, "/messages/1/content/1");
    assert_eq!(out.losses[0].policy, Policy::Moved);
}

#[test]
fn reasoning_parts_travel_as_reasoning_content() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "2+2=4", "signature": "sig"},
            {"type": "text", "text": "4"}]}]}))
    .unwrap();
    let out = OpenAiChat::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(
        out.value["messages"][0],
        json!({"role": "assistant", "content": "4", "reasoning_content": "2+2=4"})
    );
    assert_eq!(out.losses.len(), 1);
    assert_eq!(out.losses[0].path, "/messages/0/content/0/signature");
    let back = OpenAiChat::decode(out.value).unwrap();
    let Some(Content::Parts(parts)) = back.messages[0].content() else {
        panic!()
    };
    assert!(
        matches!(&parts[0], ContentPart::Reasoning(r) if r.text == "2+2=4" && r.signature.is_none())
    );
}

#[test]
fn chorus_only_fields_are_reported_not_sent() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"id": "msg_1", "role": "assistant", "content": "Revenue grew [cit_01].",
         "metadata": {"citation_map": {"cit_01": {"source_type": "pdf_document"}}}},
        {"role": "user", "content": [{"type": "data", "kind": "state", "data": {"step": 2}}]}]}))
    .unwrap();
    let out = OpenAiChat::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(
        out.value["messages"][0],
        json!({"role": "assistant", "content": "Revenue grew [cit_01]."})
    );
    assert_eq!(
        out.value["messages"][1]["content"][0]["text"],
        "## Data: state\n{\"step\":2}"
    );
    let paths: Vec<_> = out.losses.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/messages/0/id",
            "/messages/0/metadata",
            "/messages/1/content/0"
        ]
    );
}

#[test]
fn a_response_becomes_an_assistant_message_with_usage() {
    let response = json!({
        "id": "chatcmpl-123", "object": "chat.completion", "created": 1677652288, "model": "deepseek-reasoner",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello!", "reasoning_content": "greet"},
                     "logprobs": null, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21,
                  "completion_tokens_details": {"reasoning_tokens": 5}}
    });
    let conversation = OpenAiChat::decode(response).unwrap();
    let m = &conversation.messages[0];
    assert_eq!(m.role, Role::Assistant);
    assert_eq!(m.id.as_deref(), Some("chatcmpl-123"));
    assert_eq!(m.text(), "Hello!");
    let metadata = m.metadata.as_ref().unwrap();
    assert_eq!(metadata.model_version.as_deref(), Some("deepseek-reasoner"));
    let usage = metadata.token_usage.as_ref().unwrap();
    assert_eq!(
        (usage.prompt_tokens, usage.total_tokens),
        (Some(9), Some(21))
    );
    assert_eq!(
        usage.extra["completion_tokens_details"]["reasoning_tokens"],
        5
    );
    assert_eq!(metadata.extra["finish_reason"], "stop");
    // Kept for a response only: a request written from it must not carry `object`.
    assert_eq!(
        conversation.extra["x-openai-chat-response"]["object"],
        "chat.completion"
    );
}

#[test]
fn streamed_chunks_accumulate_text_reasoning_and_parallel_calls() {
    let sse = [
        json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "think "}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {"reasoning_content": "more"}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "Checking."}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"ci"}},
            {"index": 1, "id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": ""}}]}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "ty\":\"Paris\"}"}},
            {"index": 1, "function": {"arguments": "{}"}}]}}]}),
        json!({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
               "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}),
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .collect::<String>()
        + "data: [DONE]\n\n";
    let conversation = OpenAiChat::decode_str(&sse).unwrap();
    let m = &conversation.messages[0];
    let parts = m.parts();
    assert!(matches!(&parts[0], ContentPart::Reasoning(r) if r.text == "think more"));
    assert_eq!(m.text(), "Checking.");
    let calls = m.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].function.arguments, "{\"city\":\"Paris\"}");
    assert_eq!(
        (calls[1].id.as_str(), calls[1].function.name.as_str()),
        ("call_b", "get_time")
    );
    let metadata = m.metadata.as_ref().unwrap();
    assert_eq!(metadata.extra["finish_reason"], "tool_calls");
    assert_eq!(metadata.token_usage.as_ref().unwrap().total_tokens, Some(7));
}

#[test]
fn a_late_tool_result_is_moved_next_to_its_call() {
    let request = json!({"messages": [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "user", "content": "still there?"},
        {"role": "tool", "tool_call_id": "a", "content": "ok"}]});
    let out = roundtrip(request);
    let roles: Vec<_> = out.value["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    assert_eq!(roles, [json!("assistant"), json!("tool"), json!("user")]);
    assert_eq!(out.losses[0].path, "/messages/2");
}

#[test]
fn the_text_fast_path_and_the_value_decoder_agree() {
    let request = json!({"model": "m", "messages": [
        {"role": "system", "content": "s", "custom": {"a": 1}},
        {"role": "user", "name": "u", "content": [{"type": "text", "text": "hi"},
            {"type": "image_url", "image_url": {"url": "https://x/a.png", "detail": "low"}}]},
        {"role": "assistant", "content": null, "reasoning_content": "r", "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "ok", "metadata": {"trace_id": "t"}}],
        "tools": [{"type": "function", "function": {"name": "f"}}]});
    assert_eq!(
        OpenAiChat::decode_str(&request.to_string()).unwrap(),
        OpenAiChat::decode(request).unwrap()
    );
    let err =
        OpenAiChat::decode_str(r#"{"messages": [{"role": "user", "content": 5}]}"#).unwrap_err();
    assert_eq!(err.pointer, "/messages/0/content");
}

#[test]
fn a_response_survives_decode_and_encode_response() {
    let response = json!({
        "id": "chatcmpl-123", "object": "chat.completion", "created": 1677652288, "model": "gpt-4o",
        "system_fingerprint": "fp_44709d6fcb", "service_tier": "default",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "Hello!", "refusal": null, "annotations": []},
             "logprobs": null, "finish_reason": "stop"},
            {"index": 1, "message": {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
             "logprobs": null, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21,
                  "completion_tokens_details": {"reasoning_tokens": 0}}
    });
    let conversation = OpenAiChat::decode(response.clone()).unwrap();
    let out = OpenAiChatResponse::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(out.value, response);
}
