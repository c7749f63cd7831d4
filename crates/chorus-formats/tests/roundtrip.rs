//! chorus → X → chorus for every format X: when the encoder reports no loss the conversation
//! comes back unchanged, tool pairing always survives, and the encoder output always decodes.

use chorus_core::{Content, ContentPart, Conversation, Message, Nullable, Role, ToolCall};
use chorus_formats::{EncodeOptions, Format, Loss, Policy, is_paired};
use proptest::prelude::*;
use serde_json::{Value, json};

const TEXTS: [&str; 5] = [
    "hello",
    "东京 weather?",
    "two\nlines",
    "",
    "a \"quoted\" {json}",
];

fn text() -> impl Strategy<Value = String> {
    prop::sample::select(&TEXTS[..]).prop_map(str::to_owned)
}

fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => text().prop_map(|t| json!({"type": "text", "text": t})),
        1 => text().prop_map(|t| json!({"type": "text", "text": t, "index": 0})),
        1 => (text(), any::<bool>()).prop_map(|(t, signed)| if signed {
            json!({"type": "reasoning", "text": t, "signature": "sig"})
        } else {
            json!({"type": "reasoning", "text": t})
        }),
        1 => prop::sample::select(vec!["https://example.com/a.png", "data:image/png;base64,iVBORw0KGgo="])
            .prop_map(|url| json!({"type": "image_url", "image_url": {"url": url}})),
        1 => Just(json!({"type": "image_url", "image_url": {"url": "https://example.com/b.jpg", "detail": "low", "rotation": 90}})),
        1 => Just(json!({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}})),
        1 => Just(json!({"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "r.pdf"}})),
        1 => Just(json!({"type": "data", "kind": "state", "data": {"step": 1}})),
    ]
}

fn content() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(Value::Null)),
        4 => text().prop_map(|t| Some(Value::String(t))),
        3 => prop::collection::vec(part(), 0..4).prop_map(|p| Some(Value::Array(p))),
    ]
}

/// One plain message, or an assistant turn with calls followed by all its results.
fn turn() -> impl Strategy<Value = Vec<Value>> {
    let plain = (
        prop::sample::select(vec!["system", "developer", "user", "assistant"]),
        content(),
        prop::option::weighted(0.2, prop::sample::select(vec!["alice", "bob"])),
        prop::option::weighted(0.1, Just("msg_1")),
        prop::option::weighted(0.1, Just(json!({"model_version": "m1"}))),
        prop::option::weighted(0.1, Just(json!(7))),
    )
        .prop_map(|(role, content, name, id, metadata, custom)| {
            let mut m = json!({"role": role});
            set(&mut m, "content", content);
            set(&mut m, "name", name.map(Value::from));
            set(&mut m, "id", id.map(Value::from));
            set(&mut m, "metadata", metadata);
            set(&mut m, "custom", custom);
            vec![m]
        });
    let calls = (content(), 1usize..4, prop::collection::vec(content(), 3), any::<bool>()).prop_map(
        |(content, n, results, typed)| {
            let calls: Vec<Value> = (0..n)
                .map(|k| {
                    let mut call = json!({"id": format!("id{k}"), "function": {"name": "get_weather", "arguments": format!("{{\"city\": \"c{k}\"}}")}});
                    if typed {
                        call["type"] = json!("function");
                    }
                    call
                })
                .collect();
            let mut assistant = json!({"role": "assistant", "tool_calls": calls});
            set(&mut assistant, "content", content);
            let mut out = vec![assistant];
            for (k, result) in results.into_iter().take(n).enumerate() {
                let mut m = json!({"role": "tool", "tool_call_id": format!("id{k}")});
                set(&mut m, "content", result);
                out.push(m);
            }
            out
        },
    );
    prop_oneof![3 => plain, 1 => calls]
}

fn set(target: &mut Value, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        target[key] = value;
    }
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (prop::collection::vec(turn(), 0..6), any::<bool>()).prop_map(|(turns, with_tools)| {
        // Call ids are renumbered across the conversation so that they are unique.
        let mut messages: Vec<Value> = turns.into_iter().flatten().collect();
        let mut next = 0;
        let mut current: Vec<String> = Vec::new();
        for m in &mut messages {
            if let Some(calls) = m.get_mut("tool_calls").and_then(Value::as_array_mut) {
                current.clear();
                for call in calls {
                    let id = format!("call_{next}");
                    next += 1;
                    current.push(id.clone());
                    call["id"] = json!(id);
                }
            } else if m["role"] == "tool" {
                let k: usize = m["tool_call_id"].as_str().unwrap()[2..].parse().unwrap();
                m["tool_call_id"] = json!(current[k]);
            }
        }
        let mut conversation = json!({"messages": messages});
        if with_tools {
            conversation["tools"] = json!([{"type": "function", "function": {"name": "get_weather",
                "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]);
        }
        serde_json::from_value(conversation).unwrap()
    })
}

/// Forms that carry the same information: text content as one text part; no call type as `function`.
fn normalized(conversation: &Conversation) -> Conversation {
    let mut out = conversation.clone();
    for m in &mut out.messages {
        if let Nullable::Value(Content::Text(text)) = &m.content {
            m.content = Nullable::Value(Content::Parts(vec![ContentPart::text(text.clone())]));
        }
        if let Nullable::Value(calls) = &mut m.tool_calls {
            for call in calls.iter_mut() {
                call.kind.get_or_insert_with(|| "function".into());
            }
        }
    }
    out
}

/// Encodes and decodes back. The output must decode and keep tool pairing; with `exact`, a
/// conversation encoded without reported losses must also come back unchanged.
fn round_trip(
    format: Format,
    conversation: &Conversation,
    exact: bool,
) -> Result<(), TestCaseError> {
    let encoded = format
        .encode(conversation, &EncodeOptions::default())
        .map_err(|e| TestCaseError::fail(format!("{} cannot encode: {e}", format.id())))?;
    let back = format.decode(&encoded.value).map_err(|e| {
        TestCaseError::fail(format!(
            "{} output does not decode: {e}\n{}",
            format.id(),
            encoded.value
        ))
    })?;
    if is_paired(&conversation.messages) {
        prop_assert!(
            is_paired(&back.messages),
            "pairing lost in {}:\n{}",
            format.id(),
            encoded.value
        );
    }
    if exact && encoded.losses.is_empty() {
        prop_assert_eq!(
            normalized(&back),
            normalized(conversation),
            "{} without reported losses:\n{}",
            format.id(),
            encoded.value
        );
    }
    if exact {
        untouched_parts_come_back(format, conversation, &back, &encoded.losses)?;
    }
    Ok(())
}

/// With losses reported, everything no loss names must still come back unchanged: when no loss
/// moves, merges, folds or drops whole messages, the messages are the same in number, and each
/// message (and the tool list) that no loss points into is equal to the original.
fn untouched_parts_come_back(
    format: Format,
    original: &Conversation,
    back: &Conversation,
    losses: &[Loss],
) -> Result<(), TestCaseError> {
    let structural = losses.iter().any(|l| {
        matches!(l.policy, Policy::Moved | Policy::Merged | Policy::Folded)
            || l.path.matches('/').count() < 3 && l.path.starts_with("/messages")
    });
    if structural {
        return Ok(());
    }
    let (original, back) = (normalized(original), normalized(back));
    prop_assert_eq!(
        back.messages.len(),
        original.messages.len(),
        "{}: message count changed without a reported move, merge or drop: {:?}",
        format.id(),
        losses
    );
    for (i, (a, b)) in original.messages.iter().zip(&back.messages).enumerate() {
        let prefix = format!("/messages/{i}/");
        if !losses.iter().any(|l| l.path.starts_with(&prefix)) {
            prop_assert_eq!(
                b,
                a,
                "{}: message {} has no reported loss: {:?}",
                format.id(),
                i,
                losses
            );
        }
    }
    if !losses.iter().any(|l| l.path.starts_with("/tools")) {
        prop_assert_eq!(
            &back.tools,
            &original.tools,
            "{}: tools have no reported loss",
            format.id()
        );
    }
    Ok(())
}

/// 300 cases a run, or `PROPTEST_CASES` when set (to search harder, e.g. 5000).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn chorus_round_trips_exactly(c in conversation()) {
        let encoded = Format::Chorus.encode(&c, &EncodeOptions::default()).unwrap();
        prop_assert!(encoded.losses.is_empty());
        prop_assert_eq!(Format::Chorus.decode(&encoded.value).unwrap(), c);
    }

    #[test]
    fn openai_chat_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::OpenAiChat, &c, true)?;
    }

    #[test]
    fn anthropic_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::Anthropic, &c, true)?;
    }

    #[test]
    fn gemini_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::Gemini, &c, true)?;
    }

    #[test]
    fn openai_responses_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::OpenAiResponses, &c, true)?;
    }

    #[test]
    fn agentscope_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::AgentScope, &c, true)?;
    }

    #[test]
    fn a2a_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::A2a, &c, true)?;
    }

    #[test]
    fn harmony_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::Harmony, &c, true)?;
    }

    #[test]
    fn qwen3_round_trips_except_reported_losses(c in conversation()) {
        round_trip(Format::Qwen3, &c, true)?;
    }
}

/// A generated conversation with some results taken out and an orphan result put in.
fn unpaired() -> impl Strategy<Value = Conversation> {
    (
        conversation(),
        prop::collection::vec(any::<bool>(), 8),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut c, keep, at)| {
            let mut k = 0;
            c.messages.retain(|m| {
                k += 1;
                m.role != Role::Tool || keep[k % keep.len()]
            });
            let mut orphan = Message::new(Role::Tool, "late");
            orphan.tool_call_id = Some("no_such_call".into());
            let at = at.index(c.messages.len() + 1);
            c.messages.insert(at, orphan);
            c
        })
}

/// Anthropic, Gemini and Responses refuse a result without its call and a call without its
/// result: what the encoders send is always paired, and strict conversion refuses instead.
fn sends_only_pairs(format: Format, c: &Conversation) -> Result<(), TestCaseError> {
    let encoded = format.encode(c, &EncodeOptions::default()).unwrap();
    let back = format.decode(&encoded.value).unwrap();
    prop_assert!(
        is_paired(&back.messages),
        "{} sent an unpaired request:\n{}",
        format.id(),
        encoded.value
    );
    if !is_paired(&c.messages) {
        prop_assert!(
            encoded
                .losses
                .iter()
                .any(|l| l.policy == Policy::Dropped && l.path.starts_with("/messages/")),
            "{}: nothing reported dropped",
            format.id()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn provider_requests_are_always_paired(c in unpaired()) {
        for format in [Format::Anthropic, Format::Gemini, Format::OpenAiResponses] {
            sends_only_pairs(format, &c)?;
        }
    }
}

#[test]
fn the_generator_produces_loss_free_cases_for_every_format() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    for format in [
        Format::OpenAiChat,
        Format::OpenAiResponses,
        Format::Anthropic,
        Format::Gemini,
        Format::Qwen3,
        Format::AgentScope,
        Format::A2a,
        Format::Harmony,
    ] {
        let mut runner = TestRunner::deterministic();
        let lossless = (0..300)
            .filter(|_| {
                let c = conversation().new_tree(&mut runner).unwrap().current();
                !c.messages.is_empty()
                    && format
                        .encode(&c, &EncodeOptions::default())
                        .unwrap()
                        .losses
                        .is_empty()
            })
            .count();
        assert!(
            lossless >= 3,
            "{}: only {lossless} of 300 cases were loss-free",
            format.id()
        );
    }
}

#[test]
fn role_and_call_helpers_agree() {
    let mut m = Message::new(Role::Assistant, "x");
    m.tool_calls = Nullable::Value(vec![ToolCall::function("a", "f", &json!({}))]);
    assert!(!is_paired(&[m]));
}
