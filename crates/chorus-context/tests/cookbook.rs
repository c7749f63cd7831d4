//! The OpenAI cookbook "How to count tokens with tiktoken": its worked examples reproduce exactly.

use chorus_context::TokenCounter;
use chorus_core::{Conversation, Message, ToolDefinition};
use serde_json::json;

/// The cookbook's `example_messages` (corporate jargon translation).
fn example_messages() -> Vec<Message> {
    serde_json::from_value(json!([
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
        {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."}
    ]))
    .unwrap()
}

#[test]
fn chat_example_counts_match_the_cookbook() {
    // Cookbook output: 129 prompt tokens for gpt-3.5-turbo, gpt-4-0613 and gpt-4;
    // 124 for gpt-4o and gpt-4o-mini (all confirmed there against the API's usage).
    for (model, expected) in [
        ("gpt-3.5-turbo", 129),
        ("gpt-4-0613", 129),
        ("gpt-4", 129),
        ("gpt-4o", 124),
        ("gpt-4o-mini", 124),
    ] {
        let counter = TokenCounter::for_model(model).unwrap();
        let count = counter.count_messages(&example_messages()).unwrap();
        assert_eq!(count.total, expected, "{model}");
        assert_eq!(count.messages.iter().sum::<usize>() + 3, count.total);
    }
}

#[test]
fn tool_example_counts_match_the_cookbook() {
    let tools: Vec<ToolDefinition> = serde_json::from_value(json!([{
        "type": "function",
        "function": {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                    "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["location"]
            }
        }
    }]))
    .unwrap();
    let messages: Vec<Message> = serde_json::from_value(json!([
        {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
        {"role": "user", "content": "What's the weather like in San Francisco?"}
    ]))
    .unwrap();
    let conversation = Conversation {
        messages,
        tools: Some(tools),
        extra: Default::default(),
    };
    // Cookbook output: 105 for gpt-3.5-turbo and gpt-4, 101 for gpt-4o and gpt-4o-mini.
    for (model, expected) in [
        ("gpt-3.5-turbo", 105),
        ("gpt-4", 105),
        ("gpt-4o", 101),
        ("gpt-4o-mini", 101),
    ] {
        let counter = TokenCounter::for_model(model).unwrap();
        let count = counter.count_conversation(&conversation).unwrap();
        assert_eq!(count.total, expected, "{model}");
        assert!(count.breakdown.tools > 0);
    }
}

#[test]
fn a_name_on_legacy_turbo_replaces_the_role() {
    let mut named = Message::new(chorus_core::Role::User, "hi");
    named.name = Some("bob".into());
    let plain = Message::new(chorus_core::Role::User, "hi");
    let c = TokenCounter::for_model("gpt-3.5-turbo-0301").unwrap();
    let with = c.count_message(&named, 0).unwrap().total();
    let without = c.count_message(&plain, 0).unwrap().total();
    // tokens_per_name = -1: the name's own tokens minus one.
    assert_eq!(with, without + c.count_text("bob") - 1);
}
