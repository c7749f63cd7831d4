//! chorus → Harmony → chorus keeps every call/result pairing, parallel calls included, and the
//! Harmony side renders as the format expects.

use chorus_core::{ContentPart, Nullable, ReasoningPart, TextPart, ToolCall};
use chorus_harmony::chorus_map::{from_harmony, to_harmony};
use chorus_harmony::{RenderOptions, SystemContent, encoding, render};
use serde_json::{Map, json};

fn assistant(reasoning: &str, text: &str, calls: Vec<ToolCall>) -> chorus_core::Message {
    let parts = vec![
        ContentPart::Reasoning(ReasoningPart {
            text: reasoning.into(),
            signature: None,
            extra: Map::new(),
        }),
        ContentPart::Text(TextPart {
            text: text.into(),
            index: None,
            extra: Map::new(),
        }),
    ];
    let mut message = chorus_core::Message::with_parts(chorus_core::Role::Assistant, parts);
    message.tool_calls = Nullable::Value(calls);
    message
}

fn result(id: &str, text: &str) -> chorus_core::Message {
    let mut message = chorus_core::Message::new(chorus_core::Role::Tool, text);
    message.tool_call_id = Some(id.into());
    message
}

/// (function, arguments) of the call each tool result answers, in result order.
fn pairings(conversation: &chorus_core::Conversation) -> Vec<(String, String, String)> {
    let calls: Vec<&ToolCall> = conversation
        .messages
        .iter()
        .flat_map(|m| m.calls())
        .collect();
    let mut pairs: Vec<(String, String, String)> = conversation
        .messages
        .iter()
        .filter(|m| m.role == chorus_core::Role::Tool)
        .map(|m| {
            let id = m.tool_call_id.as_deref().expect("every result is paired");
            let call = calls
                .iter()
                .find(|c| c.id == id)
                .expect("the id names a call");
            (
                call.function.name.clone(),
                call.function.arguments.clone(),
                m.text(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

fn weather_conversation() -> chorus_core::Conversation {
    let call =
        |id: &str, name: &str, city: &str| ToolCall::function(id, name, &json!({"city": city}));
    chorus_core::Conversation {
        messages: vec![
            chorus_core::Message::new(chorus_core::Role::System, "Be brief."),
            chorus_core::Message::new(
                chorus_core::Role::User,
                "Weather and time in Oslo and Paris?",
            ),
            assistant(
                "Two cities, two tools.",
                "Checking.",
                vec![
                    call("a", "get_weather", "Oslo"),
                    call("b", "get_weather", "Paris"),
                    call("c", "get_time", "Oslo"),
                ],
            ),
            // Results arrive in another order than the calls.
            result("c", "09:00"),
            result("b", "18 C"),
            result("a", "11 C"),
            assistant("Answer now.", "", vec![call("d", "get_weather", "Rome")]),
            result("d", "25 C"),
            chorus_core::Message::new(
                chorus_core::Role::Assistant,
                "Oslo 11 C at 09:00, Paris 18 C, Rome 25 C.",
            ),
        ],
        tools: None,
        extra: Map::new(),
    }
}

#[test]
fn round_trip_keeps_every_pairing() {
    let source = weather_conversation();
    let mapped = to_harmony(&source, SystemContent::default());
    assert!(mapped.losses.is_empty(), "{:?}", mapped.losses);
    let back = from_harmony(&mapped.conversation);
    assert_eq!(pairings(&back), pairings(&source));
    // The assistant turns come back with their reasoning, text and calls.
    let first = back
        .messages
        .iter()
        .find(|m| m.role == chorus_core::Role::Assistant)
        .unwrap();
    assert_eq!(first.calls().len(), 3);
    assert!(
        matches!(&first.parts()[0], ContentPart::Reasoning(r) if r.text == "Two cities, two tools.")
    );
    assert_eq!(first.text(), "Checking.");
}

#[test]
fn harmony_side_has_the_expected_shape() {
    let mapped = to_harmony(&weather_conversation(), SystemContent::default());
    let tokens = render(
        &mapped.conversation,
        &RenderOptions {
            drop_analysis: false,
            ..Default::default()
        },
    )
    .unwrap();
    let text = encoding().decode_utf8(&tokens).unwrap();
    assert!(
        text.contains("<|start|>developer<|message|># Instructions\n\nBe brief.<|end|>"),
        "{text}"
    );
    assert!(
        text.contains(
            "<|start|>assistant<|channel|>analysis<|message|>Two cities, two tools.<|end|>"
        )
    );
    assert!(text.contains("<|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>"));
    assert!(text.contains("<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>"));
    // Results were put in call order: Oslo weather, Paris weather, then Oslo time.
    let oslo = text.find("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>11 C<|end|>").unwrap();
    let paris = text.find("18 C").unwrap();
    let time = text
        .find(
            "<|start|>functions.get_time to=assistant<|channel|>commentary<|message|>09:00<|end|>",
        )
        .unwrap();
    assert!(oslo < paris && paris < time);
    assert!(text.contains("<|start|>assistant<|channel|>final<|message|>Oslo 11 C at 09:00, Paris 18 C, Rome 25 C.<|end|>"));
}

#[test]
fn what_harmony_cannot_carry_is_reported() {
    let mut source = weather_conversation();
    source.messages[1] = chorus_core::Message::with_parts(
        chorus_core::Role::User,
        vec![
            ContentPart::text("look: "),
            serde_json::from_value(
                json!({"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}),
            )
            .unwrap(),
        ],
    );
    let mapped = to_harmony(&source, SystemContent::default());
    assert_eq!(mapped.losses.len(), 1);
    assert_eq!(mapped.losses[0].pointer, "/messages/1/content/1");
}
