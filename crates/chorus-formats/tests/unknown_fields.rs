//! Unknown provider fields survive decode → encode to the same format: every JSON format is fed a
//! document in its documented shape carrying request options and fields chorus does not model, at
//! the top level, on messages, on parts, on calls and on tool definitions.

use chorus_formats::{EncodeOptions, Format};
use serde_json::{Value, json};

fn survives(format: Format, document: Value) {
    let conversation = format
        .decode(&document.to_string())
        .unwrap_or_else(|e| panic!("{}: {e}", format.id()));
    let encoded = format
        .encode(&conversation, &EncodeOptions::default())
        .unwrap();
    assert_eq!(encoded.losses, [], "{}", format.id());
    let back: Value = serde_json::from_str(&encoded.value).unwrap();
    assert_eq!(back, document, "{}", format.id());
}

#[test]
fn openai_chat_keeps_unknown_fields() {
    survives(
        Format::OpenAiChat,
        json!({
            "model": "gpt-4o", "temperature": 0.2, "x_vendor": {"a": 1},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi", "x_part": 1}], "x_msg": true},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "f", "arguments": "{}", "x_fn": 2}, "x_call": 3}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok", "x_tool": 4}
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": true, "x_def": 5}}],
            "tool_choice": "auto"
        }),
    );
}

#[test]
fn openai_responses_keeps_unknown_fields() {
    survives(
        Format::OpenAiResponses,
        json!({
            "model": "gpt-4.1", "store": false, "max_output_tokens": 256,
            "input": [
                {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"}
            ],
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": true}]
        }),
    );
}

#[test]
fn anthropic_keeps_unknown_fields() {
    survives(
        Format::Anthropic,
        json!({
            "model": "claude-sonnet-4-5", "max_tokens": 512, "stop_sequences": ["END"],
            "metadata": {"user_id": "u-1"},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}, "cache_control": {"type": "ephemeral"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok", "cache_control": {"type": "ephemeral"}}]}
            ],
            "tools": [{"name": "f", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
            "tool_choice": {"type": "auto"}
        }),
    );
}

#[test]
fn gemini_keeps_unknown_fields() {
    survives(
        Format::Gemini,
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}, "id": "c1"}}]},
                {"role": "user", "parts": [{"function_response": {"name": "f", "response": {"ok": true}, "id": "c1"}}]}
            ],
            "generationConfig": {"temperature": 0.1, "thinkingConfig": {"includeThoughts": true}},
            "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
            "tools": [{"function_declarations": [{"name": "f", "parameters": {"type": "object"}}]}, {"google_search": {}}]
        }),
    );
}

#[test]
fn agentscope_keeps_unknown_fields() {
    survives(
        Format::AgentScope,
        json!([
            {"id": "m1", "name": "alice", "role": "user", "content": "hi",
             "metadata": {"mood": "curious"}, "timestamp": "2025-01-01 00:00:00.000"},
            {"id": "m2", "name": "Friday", "role": "assistant", "content": [
                {"type": "text", "text": "checking"},
                {"type": "tool_use", "id": "c1", "name": "f", "input": {}}],
             "timestamp": "2025-01-01 00:00:01.000"},
            {"id": "m3", "name": "system", "role": "system", "content": [
                {"type": "tool_result", "id": "c1", "name": "f", "output": "ok"}],
             "timestamp": "2025-01-01 00:00:02.000"}
        ]),
    );
}

#[test]
fn a2a_keeps_unknown_fields() {
    survives(
        Format::A2a,
        json!([
            {"messageId": "m1", "role": "ROLE_USER", "contextId": "ctx-1", "taskId": "t-1",
             "referenceTaskIds": ["t-0"], "extensions": ["https://example.com/ext/v1"],
             "parts": [{"text": "hi", "metadata": {"lang": "en"}},
                       {"data": {"k": 1}}]},
            {"messageId": "m2", "role": "ROLE_AGENT", "contextId": "ctx-1",
             "parts": [{"url": "https://example.com/r.pdf", "mediaType": "application/pdf", "filename": "r.pdf"}]}
        ]),
    );
}
