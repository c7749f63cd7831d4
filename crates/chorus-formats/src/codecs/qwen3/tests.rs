//! Golden tests from the Qwen3 template's documented output (seed 002's ChatML example).

use chorus_core::{ContentPart, Role};
use serde_json::json;

use super::*;
use crate::Policy;

#[test]
fn a_completion_parses_into_reasoning_content_and_calls() {
    let completion = "<think>\nUser wants Tokyo weather. Need to call get_weather function.\n</think>\n\nI'll check the current weather in Tokyo for you.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\", \"unit\": \"celsius\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call><|im_end|>";
    let m = Qwen3::parse_completion(completion);
    assert_eq!(m.role, Role::Assistant);
    let parts = m.parts();
    assert!(
        matches!(&parts[0], ContentPart::Reasoning(r) if r.text == "User wants Tokyo weather. Need to call get_weather function.")
    );
    assert_eq!(m.text(), "I'll check the current weather in Tokyo for you.");
    let calls = m.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].function.name.as_str()),
        ("call_0", "get_weather")
    );
    assert_eq!(
        calls[0].function.arguments,
        "{\"city\": \"Tokyo\", \"unit\": \"celsius\"}"
    );
    assert_eq!(calls[1].function.arguments, "{}");
}

#[test]
fn a_malformed_tool_call_stays_text() {
    let m = Qwen3::parse_completion("Sure.\n<tool_call>\n{not json}\n</tool_call>");
    assert!(m.calls().is_empty());
    assert_eq!(m.text(), "Sure.\n<tool_call>\n{not json}\n</tool_call>");
}

#[test]
fn renders_the_documented_tool_exchange() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "user", "content": "What's the weather in Tokyo?"},
        {"role": "assistant", "content": "I'll check.", "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Tokyo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "{\"temperature\": 22}"},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "22 is mild."}, {"type": "text", "text": "It is 22°C."}]}
    ]}))
    .unwrap();
    let out = Qwen3::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert_eq!(out.losses, []);
    assert_eq!(
        out.value,
        "<|im_start|>user\nWhat's the weather in Tokyo?<|im_end|>\n<|im_start|>assistant\nI'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Tokyo\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n{\"temperature\": 22}\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n22 is mild.\n</think>\n\nIt is 22°C.<|im_end|>\n"
    );
    assert_eq!(
        Qwen3::decode_str(&out.value).unwrap().messages,
        conversation.messages
    );
}

#[test]
fn what_the_text_cannot_carry_is_reported() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "user", "name": "alice", "content": [{"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "old thought"}, {"type": "text", "text": "ok"}]},
        {"role": "user", "content": "next"}
    ]}))
    .unwrap();
    let out = Qwen3::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert!(out.value.starts_with(
        "<|im_start|>user\nalice: look<|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n"
    ));
    let losses: Vec<_> = out
        .losses
        .iter()
        .map(|l| (l.path.as_str(), l.policy))
        .collect();
    assert_eq!(
        losses,
        [
            ("/messages/0/name", Policy::Prefixed),
            ("/messages/0/content/1", Policy::Dropped),
            ("/messages/1/content", Policy::Dropped),
        ]
    );
}

#[test]
fn generation_prompt_with_thinking_off_is_left_out_when_parsing() {
    let conversation: Conversation =
        serde_json::from_value(json!({"messages": [{"role": "user", "content": "hi"}]})).unwrap();
    let options = EncodeOptions {
        add_generation_prompt: true,
        enable_thinking: Some(false),
        ..EncodeOptions::default()
    };
    let text = Qwen3::encode(&conversation, &options).unwrap().value;
    assert!(text.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    assert_eq!(
        Qwen3::decode_str(&text).unwrap().messages,
        conversation.messages
    );
    let err = Qwen3::decode_str("<|im_start|>wizard\nx<|im_end|>\n").unwrap_err();
    let expected = err.message.split(", found ").next().unwrap_or_default();
    assert!(
        expected.starts_with("expected ") && expected.contains("role"),
        "{err}"
    );
}
