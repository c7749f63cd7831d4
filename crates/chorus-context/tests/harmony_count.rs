//! gpt-oss counts equal the length of what chorus-harmony renders for the same request.

use chorus_context::trim::{History, trim_chorus};
use chorus_context::{ContextError, TokenCounter};
use chorus_core::{ContentPart, Conversation, Message, Nullable, Role, ToolCall, ToolDefinition};
use chorus_harmony::chorus_map::to_harmony;
use chorus_harmony::{RenderOptions, SystemContent, render};
use serde_json::json;

fn rendered(conversation: &Conversation) -> usize {
    let mapped = to_harmony(conversation, SystemContent::default());
    render(&mapped.conversation, &RenderOptions::default())
        .unwrap()
        .len()
}

fn weather_tool() -> ToolDefinition {
    serde_json::from_value(json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }, "required": ["city"]}
    }}))
    .unwrap()
}

fn agent_conversation() -> Conversation {
    let mut thinking = Message::with_parts(
        Role::Assistant,
        vec![
            serde_json::from_value::<ContentPart>(
                json!({"type": "reasoning", "text": "I should look the weather up."}),
            )
            .unwrap(),
        ],
    );
    thinking.tool_calls = Nullable::Value(vec![ToolCall::function(
        "call_1",
        "get_weather",
        &json!({"city": "Paris", "unit": "celsius"}),
    )]);
    let mut result = Message::new(Role::Tool, r#"{"temp": 21, "sky": "clear"}"#);
    result.tool_call_id = Some("call_1".into());
    Conversation {
        messages: vec![
            Message::new(Role::System, "You are a concise travel assistant."),
            Message::new(
                Role::User,
                "What's the weather in Paris? Réponds en français.",
            ),
            thinking,
            result,
            Message::new(Role::Assistant, "Il fait 21 °C et le ciel est dégagé."),
            Message::new(Role::User, "Merci ! Et demain ?"),
        ],
        tools: Some(vec![weather_tool()]),
        extra: Default::default(),
    }
}

#[test]
fn a_conversation_counts_what_harmony_renders() {
    let counter = TokenCounter::for_model("gpt-oss-120b").unwrap();
    let conversation = agent_conversation();
    let count = counter.count_conversation(&conversation).unwrap();
    assert_eq!(count.total, rendered(&conversation));
    assert_eq!(count.breakdown.total(), count.total);
    assert_eq!(count.messages.len(), 6);
    assert!(count.breakdown.tools > 0 && count.breakdown.text > 0);
    // Without tools the developer message loses its `functions` namespace.
    let bare = Conversation {
        tools: None,
        ..conversation
    };
    let without = counter.count_conversation(&bare).unwrap().total;
    assert_eq!(without, rendered(&bare));
    assert!(without < count.total);
}

#[test]
fn a_user_message_costs_its_harmony_framing() {
    let counter = TokenCounter::for_model("gpt-oss-20b").unwrap();
    // <|start|> user <|message|> hello <|end|>
    let hello = Message::new(Role::User, "hello");
    assert_eq!(counter.count_message(&hello, 0).unwrap().total(), 5);
    let empty = Conversation {
        messages: vec![],
        tools: None,
        extra: Default::default(),
    };
    // The system message and `<|start|>assistant`.
    assert_eq!(counter.reply_priming().unwrap(), rendered(&empty));
    let one = counter.count_messages(&[hello]).unwrap();
    assert_eq!(one.total, rendered(&empty) + 5);
    assert_eq!(one.messages, vec![5]);
}

#[test]
fn cached_history_totals_equal_the_rendering_for_user_and_assistant_turns() {
    let counter = TokenCounter::for_model("gpt-oss-120b").unwrap();
    let messages: Vec<Message> = (0..12)
        .map(|i| {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            Message::new(
                role,
                format!("turn {i}: naïve café — 東京 {}", "x".repeat(i)),
            )
        })
        .collect();
    let tools = [weather_tool()];
    let history = History::from_messages(counter, &tools, &messages).unwrap();
    let conversation = Conversation {
        messages,
        tools: Some(tools.to_vec()),
        extra: Default::default(),
    };
    assert_eq!(history.total(), rendered(&conversation));
}

#[test]
fn media_harmony_cannot_carry_costs_nothing() {
    let counter = TokenCounter::for_model("gpt-oss-120b").unwrap();
    let image: ContentPart = serde_json::from_value(json!({"type": "image_url",
        "image_url": {"url": "https://example.com/p.jpg", "detail": "high"}}))
    .unwrap();
    let with_image = Message::with_parts(Role::User, vec![ContentPart::text("look"), image]);
    let b = counter.count_message(&with_image, 0).unwrap();
    assert_eq!(b.images, 0);
    assert_eq!(
        b.total(),
        counter
            .count_message(&Message::new(Role::User, "look"), 0)
            .unwrap()
            .total()
    );
}

#[test]
fn trimming_for_gpt_oss_fits_the_rendered_total() {
    let counter = TokenCounter::for_model("gpt-oss-120b").unwrap();
    let base = agent_conversation();
    let mut messages = vec![base.messages[0].clone()];
    for turn in 0..6 {
        for m in &base.messages[1..] {
            let mut m = m.clone();
            if let Some(calls) = m.tool_calls.value_mut() {
                calls[0].id = format!("call_{turn}");
            }
            if m.tool_call_id.is_some() {
                m.tool_call_id = Some(format!("call_{turn}"));
            }
            messages.push(m);
        }
    }
    let tools = base.tools.clone().unwrap();
    let full = counter.count_request(&messages, &tools).unwrap().total;
    // The cached per-message counts are only an estimate here, so fitting is not by construction.
    let estimate = History::from_messages(counter.clone(), &tools, &messages)
        .unwrap()
        .total();
    assert_ne!(estimate, full);
    let mut trimmed_some = 0;
    for budget in (0..=full + 10).step_by(37) {
        match trim_chorus(&messages, &tools, &counter, budget, None) {
            Ok(trimmed) => {
                let kept = Conversation {
                    messages: trimmed.messages.clone(),
                    tools: Some(tools.clone()),
                    extra: Default::default(),
                };
                let rendered = rendered(&kept);
                assert!(rendered <= budget, "{rendered} > {budget}");
                assert_eq!(trimmed.report.tokens_after, rendered);
                assert_eq!(trimmed.report.tokens_before, full);
                trimmed_some += usize::from(trimmed.messages.len() < messages.len());
            }
            Err(ContextError::DoesNotFit { budget: b, .. }) => assert_eq!(b, budget),
            Err(other) => panic!("{other}"),
        }
    }
    assert!(trimmed_some > 3);
}
