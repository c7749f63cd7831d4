//! The chorus strategy under every counter (gpt-oss's rendered counts included, and a real
//! `tokenizer.json` when `CHORUS_TEST_QWEN3_TOKENIZER` names one), over generated
//! histories that include the empty history and histories of only system, developer or data
//! messages: the result fits the budget and says so truthfully, or the error gives the true count
//! of what could not be dropped; a tool call never leaves without its results; and it returns.

use std::collections::HashSet;
use std::sync::mpsc;
use std::time::Duration;

use chorus_context::trim::trim_chorus;
use chorus_context::{ContextError, TokenCounter};
use chorus_core::{Content, ContentPart, Message, Nullable, Role, ToolCall, ToolDefinition};
use proptest::prelude::*;
use serde_json::json;

const MODELS: [&str; 7] = [
    "gpt-4o",
    "gpt-4",
    "approximate",
    "gpt-oss-20b",
    "claude-sonnet-4-5",
    "gemini-2.5-pro",
    "some-unknown-model",
];

fn text(role: Role, words: usize) -> Message {
    Message::new(role, "word ".repeat(words).trim_end())
}

fn data(step: usize) -> Message {
    let part: ContentPart = serde_json::from_value(
        json!({"type": "data", "kind": format!("state{step}"), "data": {"step": step}}),
    )
    .unwrap();
    Message::with_parts(Role::User, vec![part])
}

fn with_image(words: usize) -> Message {
    let part: ContentPart = serde_json::from_value(json!({
        "type": "image_url",
        "image_url": {"url": "https://example.com/x.png", "width": 800, "height": 600}
    }))
    .unwrap();
    Message::with_parts(
        Role::User,
        vec![ContentPart::text("word ".repeat(words)), part],
    )
}

fn calls(next: &mut usize, sizes: &[usize]) -> Vec<Message> {
    let ids: Vec<String> = sizes
        .iter()
        .map(|_| {
            *next += 1;
            format!("call_{next}")
        })
        .collect();
    let mut call = Message::new(Role::Assistant, "");
    call.tool_calls = Nullable::Value(
        ids.iter()
            .map(|id| ToolCall::function(id.as_str(), "lookup", &json!({"q": id})))
            .collect(),
    );
    let mut out = vec![call];
    for (id, size) in ids.iter().zip(sizes) {
        let mut result = text(Role::Tool, *size);
        result.tool_call_id = Some(id.clone());
        out.push(result);
    }
    out
}

/// A pinned message: system, developer or data.
fn pinned() -> impl Strategy<Value = Message> {
    prop_oneof![
        (1usize..80).prop_map(|w| text(Role::System, w)),
        (1usize..80).prop_map(|w| text(Role::Developer, w)),
        (0usize..5).prop_map(data),
    ]
}

/// One step of a turn after its user message.
#[derive(Debug, Clone)]
enum Step {
    Say(usize),
    Calls(Vec<usize>),
    Pin(Box<Message>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1usize..40).prop_map(Step::Say),
        2 => prop::collection::vec(1usize..50, 1..4).prop_map(Step::Calls),
        1 => pinned().prop_map(|m| Step::Pin(Box::new(m))),
    ]
}

/// Histories: empty; only pinned messages; or turns (a user message, maybe with an image, then
/// steps) ending in a plain user message.
fn history() -> impl Strategy<Value = Vec<Message>> {
    let turns = (
        prop::collection::vec(pinned(), 0..3),
        prop::collection::vec(
            (
                1usize..30,
                any::<bool>(),
                prop::collection::vec(step(), 0..4),
            ),
            0..5,
        ),
        1usize..20,
    )
        .prop_map(|(head, turns, last)| {
            let mut out = head;
            let mut next = 0;
            for (words, image, steps) in turns {
                out.push(if image {
                    with_image(words)
                } else {
                    text(Role::User, words)
                });
                for s in steps {
                    match s {
                        Step::Say(w) => out.push(text(Role::Assistant, w)),
                        Step::Calls(sizes) => out.extend(calls(&mut next, &sizes)),
                        Step::Pin(m) => out.push(*m),
                    }
                }
            }
            out.push(text(Role::User, last));
            out
        });
    prop_oneof![
        1 => Just(Vec::new()),
        2 => prop::collection::vec(pinned(), 1..5),
        1 => prop::collection::vec((0usize..5).prop_map(data), 1..4),
        6 => turns,
    ]
}

fn tools() -> impl Strategy<Value = Vec<ToolDefinition>> {
    prop_oneof![
        Just(Vec::new()),
        Just(vec![
            serde_json::from_value(json!({"type": "function", "function": {
                "name": "lookup", "description": "Looks a word up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}
            }}))
            .unwrap()
        ]),
    ]
}

fn is_pinned(m: &Message) -> bool {
    matches!(m.role, Role::System | Role::Developer)
        || matches!(m.content(), Some(Content::Parts(p)) if p.iter().any(|p| matches!(p, ContentPart::Data(_))))
}

/// Runs `f` on a thread of its own; fails when it has not returned within a minute.
fn returns<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(60)).ok()
}

fn check(
    model: &str,
    history: Vec<Message>,
    tools: Vec<ToolDefinition>,
    budget: usize,
) -> Result<(), TestCaseError> {
    check_with(
        model,
        TokenCounter::for_model(model).unwrap(),
        history,
        tools,
        budget,
    )
}

fn check_with(
    model: &str,
    counter: TokenCounter,
    history: Vec<Message>,
    tools: Vec<ToolDefinition>,
    budget: usize,
) -> Result<(), TestCaseError> {
    let (c, h, t) = (counter.clone(), history.clone(), tools.clone());
    let Some(result) = returns(move || trim_chorus(&h, &t, &c, budget, None)) else {
        return Err(TestCaseError::fail(format!(
            "{model}: trimming did not return within a minute"
        )));
    };
    match result {
        Ok(trimmed) => {
            let total = counter
                .count_request(&trimmed.messages, &tools)
                .unwrap()
                .total;
            prop_assert!(total <= budget, "{model}: {total} > {budget}");
            prop_assert_eq!(total, trimmed.report.tokens_after, "{}", model);
            let called: HashSet<&str> = trimmed
                .messages
                .iter()
                .flat_map(|m| m.calls())
                .map(|c| c.id.as_str())
                .collect();
            let answered: HashSet<&str> = trimmed
                .messages
                .iter()
                .filter_map(|m| m.tool_call_id.as_deref())
                .collect();
            prop_assert_eq!(called, answered, "{}: a split tool call", model);
        }
        Err(ContextError::DoesNotFit {
            needed,
            budget: b,
            reason,
        }) => {
            prop_assert_eq!(b, budget);
            prop_assert!(needed > budget, "{model}: needed {needed} fits {budget}");
            // The true count of what cannot be dropped: the pinned messages and the newest
            // message (the generated histories end with a plain user message, or hold nothing
            // that may be dropped).
            let mut floor: Vec<Message> =
                history.iter().filter(|m| is_pinned(m)).cloned().collect();
            if let Some(last) = history.last().filter(|m| !is_pinned(m)) {
                floor.push(last.clone());
            }
            let floor = counter.count_request(&floor, &tools).unwrap().total;
            prop_assert_eq!(needed, floor, "{}: {}", model, reason);
        }
        Err(other) => prop_assert!(false, "{model}: unexpected error {other}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn every_counter_fits_or_says_why(
        model in prop::sample::select(&MODELS[..]),
        history in history(),
        tools in tools(),
        budget in 0usize..2500,
    ) {
        check(model, history, tools, budget)?;
    }
}

#[test]
fn every_counter_on_the_edge_cases() {
    let cases: Vec<Vec<Message>> = vec![
        Vec::new(),
        vec![text(Role::System, 50)],
        vec![data(1), data(2)],
        vec![text(Role::Developer, 10), data(1), text(Role::System, 10)],
    ];
    for model in MODELS {
        for history in &cases {
            for budget in [0, 1, 7, 60, 200] {
                check(model, history.clone(), Vec::new(), budget)
                    .unwrap_or_else(|e| panic!("{model} {budget} {history:?}: {e}"));
            }
        }
    }
}

/// The same promises with a Hugging Face tokenizer (Qwen3's real `tokenizer.json`, ChatML
/// framing), when `CHORUS_TEST_QWEN3_TOKENIZER` names it.
#[cfg(feature = "hf")]
#[test]
fn a_tokenizer_json_counter_fits_or_says_why() {
    use proptest::test_runner::{Config, TestRunner};
    let Some(path) = std::env::var_os("CHORUS_TEST_QWEN3_TOKENIZER").filter(|p| !p.is_empty())
    else {
        eprintln!(
            "a_tokenizer_json_counter_fits_or_says_why: not run: CHORUS_TEST_QWEN3_TOKENIZER is not set"
        );
        return;
    };
    let tokenizer = chorus_context::HfTokenizer::from_file(std::path::Path::new(&path))
        .unwrap_or_else(|e| panic!("CHORUS_TEST_QWEN3_TOKENIZER: {e}"));
    let counter = TokenCounter::with_tokenizer(
        std::sync::Arc::new(tokenizer),
        "qwen3-8b",
        &chorus_context::CostTable::default(),
    )
    .unwrap();
    let mut runner = TestRunner::new(Config::with_cases(64));
    runner
        .run(
            &(history(), tools(), 0usize..2500),
            |(history, tools, budget)| {
                check_with(
                    "qwen3 tokenizer.json",
                    counter.clone(),
                    history,
                    tools,
                    budget,
                )
            },
        )
        .unwrap();
}
