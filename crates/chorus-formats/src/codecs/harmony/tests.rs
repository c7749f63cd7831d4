//! Harmony through chorus-harmony: the documented tool-call exchange, and what is reported.

use chorus_core::Role;
use serde_json::json;

use super::*;

fn conversation() -> Conversation {
    serde_json::from_value(json!({
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "What is the weather in Tokyo?"},
            {"role": "assistant", "content": [{"type": "reasoning", "text": "Need the weather tool."}], "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}"}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "{\"temperature\":22}"},
            {"role": "assistant", "content": "22 °C in Tokyo."}
        ],
        "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather by city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    }))
    .unwrap()
}

#[test]
fn renders_the_documented_shape_and_parses_back_the_calls() {
    let out = Harmony::encode(&conversation(), &EncodeOptions::default()).unwrap();
    let text = &out.value;
    assert!(text.starts_with("<|start|>system<|message|>"), "{text}");
    assert!(
        text.contains(
            "<|start|>assistant<|channel|>analysis<|message|>Need the weather tool.<|end|>"
        ),
        "{text}"
    );
    assert!(text.contains("to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Tokyo\"}<|call|>"), "{text}");
    assert!(text.contains("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"temperature\":22}<|end|>"), "{text}");
    let back = Harmony::decode_str(text).unwrap();
    let calls: Vec<_> = back.messages.iter().flat_map(|m| m.calls()).collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].function.arguments, "{\"city\":\"Tokyo\"}");
    let result = back.messages.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(result.tool_call_id.as_deref(), Some(calls[0].id.as_str()));
    assert!(
        out.losses.iter().any(|l| l.path == "/tools"),
        "{:?}",
        out.losses
    );
}

#[test]
fn images_are_reported_at_their_pointer() {
    let mut conversation = conversation();
    conversation.messages[1] = serde_json::from_value(json!({"role": "user", "name": "alice", "content": [
        {"type": "text", "text": "and this?"}, {"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}))
    .unwrap();
    let out = Harmony::encode(
        &conversation,
        &EncodeOptions {
            add_generation_prompt: true,
            ..EncodeOptions::default()
        },
    )
    .unwrap();
    assert!(out.value.ends_with("<|start|>assistant"));
    assert!(out.value.contains("alice: and this?"));
    assert!(
        out.losses
            .iter()
            .any(|l| l.path.starts_with("/messages/1/content/1")),
        "{:?}",
        out.losses
    );
    assert!(Harmony::decode_str(&out.value).is_ok());
}

#[test]
fn malformed_text_is_rejected_with_a_token_position() {
    let err = Harmony::decode_str("<|start|>user<|message|>hi<|end|><|message|>").unwrap_err();
    assert!(err.pointer.starts_with("token "), "{err}");
}

/// Found by the round-trip property test: text then reasoning came back as reasoning then text.
#[test]
fn reasoning_after_text_is_reported_as_moved() {
    for calls in [true, false] {
        let mut assistant = json!({"role": "assistant", "content": [
            {"type": "text", "text": "hello"}, {"type": "reasoning", "text": "think"}]});
        if calls {
            assistant["tool_calls"] = json!([{"id": "call_0", "type": "function",
                "function": {"name": "get_weather", "arguments": "{}"}}]);
        }
        let conversation: Conversation =
            serde_json::from_value(json!({"messages": [assistant]})).unwrap();
        let out = Harmony::encode(&conversation, &EncodeOptions::default()).unwrap();
        let back = Harmony::decode_str(&out.value).unwrap();
        assert_ne!(back.messages[0].content, conversation.messages[0].content);
        assert!(
            out.losses
                .iter()
                .any(|l| l.path == "/messages/0/content/1" && l.policy == Policy::Moved),
            "{:?}",
            out.losses
        );
    }
}

#[test]
fn reasoning_before_text_keeps_its_order_without_a_loss() {
    let conversation: Conversation = serde_json::from_value(json!({"messages": [
        {"role": "assistant", "content": [{"type": "reasoning", "text": "think"}, {"type": "text", "text": "hello"}]}]}))
    .unwrap();
    let out = Harmony::encode(&conversation, &EncodeOptions::default()).unwrap();
    assert!(out.losses.is_empty(), "{:?}", out.losses);
    assert_eq!(
        Harmony::decode_str(&out.value).unwrap().messages,
        conversation.messages
    );
}
