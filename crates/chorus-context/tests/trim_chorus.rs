//! The chorus strategy: examples and property tests (fits, never orphans, keeps pinned, keeps
//! order, fails only when it must).

use std::collections::HashSet;

use chorus_context::trim::{History, trim_chorus};
use chorus_context::{ContextError, TokenCounter};
use chorus_core::{Content, ContentPart, Message, Nullable, Role, ToolCall};
use proptest::prelude::*;
use serde_json::json;

fn msg(role: Role, id: &str, text: &str) -> Message {
    let mut m = Message::new(role, text);
    m.id = Some(id.into());
    m
}

fn image(id: &str, text: &str) -> Message {
    let part: ContentPart = serde_json::from_value(json!({
        "type": "image_url",
        "image_url": {"url": "https://example.com/x.png", "detail": "high", "width": 1024, "height": 1024}
    }))
    .unwrap();
    let mut m = Message::with_parts(Role::User, vec![ContentPart::text(text), part]);
    m.id = Some(id.into());
    m
}

fn call(id: &str, call_ids: &[&str]) -> Message {
    let mut m = msg(Role::Assistant, id, "");
    m.tool_calls = Nullable::Value(
        call_ids
            .iter()
            .map(|c| ToolCall::function(*c, "lookup", &json!({"q": c})))
            .collect(),
    );
    m
}

fn result(id: &str, call_id: &str, text: &str) -> Message {
    let mut m = msg(Role::Tool, id, text);
    m.tool_call_id = Some(call_id.into());
    m
}

fn data_message(id: &str) -> Message {
    let part: ContentPart =
        serde_json::from_value(json!({"type": "data", "kind": "state", "data": {"step": 1}}))
            .unwrap();
    let mut m = Message::with_parts(Role::User, vec![part]);
    m.id = Some(id.into());
    m
}

fn ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m.id.clone().unwrap_or_default())
        .collect()
}

fn counter() -> TokenCounter {
    TokenCounter::for_model("gpt-4o").unwrap()
}

#[test]
fn old_images_go_before_any_turn() {
    let history = vec![
        msg(Role::System, "s", "Be brief."),
        image("u1", "What is in this picture?"),
        msg(Role::Assistant, "a1", "A cat."),
        msg(Role::User, "u2", "And its color?"),
    ];
    let c = counter();
    let full = c.count_messages(&history).unwrap().total;
    let t = trim_chorus(&history, &[], &c, full - 700, None).unwrap();
    assert_eq!(ids(&t.messages), ["s", "u1", "a1", "u2"]);
    assert_eq!(t.report.replaced.len(), 1);
    assert_eq!(t.report.replaced[0].media_tokens, 765);
    assert!(
        t.messages[1]
            .text()
            .contains("[image removed to save context: 765 tokens]")
    );
    assert_eq!(
        c.count_messages(&t.messages).unwrap().total,
        t.report.tokens_after
    );
    assert!(t.report.dropped.is_empty());
}

#[test]
fn a_call_and_its_results_leave_together_and_the_summary_comes_in() {
    let history = vec![
        msg(Role::System, "s", "Be brief."),
        data_message("d"),
        msg(Role::User, "u1", "Look up a and b, please."),
        call("c", &["call_a", "call_b"]),
        result("ra", "call_a", &"result a ".repeat(40)),
        result("rb", "call_b", &"result b ".repeat(40)),
        msg(Role::Assistant, "a1", "Done."),
        msg(Role::User, "u2", "Thanks. Now what?"),
    ];
    let c = counter();
    let summary = msg(Role::System, "sum", "Earlier: a and b were looked up.");
    let t = trim_chorus(&history, &[], &c, 120, Some(&summary)).unwrap();
    assert_eq!(ids(&t.messages), ["s", "d", "sum", "u2"]);
    assert!(t.report.summary_inserted);
    assert_eq!(
        t.report.dropped.iter().map(|d| d.index).collect::<Vec<_>>(),
        [2, 3, 4, 5, 6]
    );
    assert!(c.count_messages(&t.messages).unwrap().total <= 120);
}

#[test]
fn pinned_messages_alone_over_budget_fail_with_the_reason() {
    let history = vec![
        msg(Role::System, "s", &"rule ".repeat(200)),
        msg(Role::User, "u", "hi"),
    ];
    let err = trim_chorus(&history, &[], &counter(), 50, None).unwrap_err();
    let ContextError::DoesNotFit {
        budget,
        needed,
        reason,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(*budget, 50);
    assert!(*needed > 200);
    assert!(reason.contains("pinned"), "{reason}");
}

/// Runs `f` on a thread of its own and fails when it has not returned after a minute, so a
/// trimming loop without an exit fails the test instead of hanging it.
fn within_a_minute<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("{what} did not return within a minute"))
}

#[test]
fn an_empty_history_for_gpt_oss_fails_instead_of_hanging() {
    // Regression: the gpt-oss re-plan loop had no exit when the plan could not shrink.
    let result = within_a_minute("trim_chorus(gpt-oss-20b, [], 7)", || {
        let c = TokenCounter::for_model("gpt-oss-20b").unwrap();
        trim_chorus(&[], &[], &c, 7, None)
    });
    let fixed = TokenCounter::for_model("gpt-oss-20b")
        .unwrap()
        .count_messages(&[])
        .unwrap()
        .total;
    match result {
        Err(ContextError::DoesNotFit {
            needed,
            budget,
            reason,
        }) => {
            assert_eq!(budget, 7);
            assert_eq!(needed, fixed);
            assert!(reason.contains("reply priming"), "{reason}");
        }
        other => panic!("expected DoesNotFit, got {other:?}"),
    }
}

#[test]
fn pinned_only_history_over_budget_fails_instead_of_claiming_success() {
    // Regression: with nothing that may be dropped, the plan reported tokens_after above the
    // budget and trimming succeeded.
    let history = vec![
        msg(Role::System, "s", &"rule ".repeat(60)),
        msg(Role::Developer, "dev", "Answer in French."),
        data_message("d"),
    ];
    for model in ["gpt-4o", "gpt-4", "approximate", "gpt-oss-20b"] {
        let c = TokenCounter::for_model(model).unwrap();
        let full = c.count_messages(&history).unwrap().total;
        let err = trim_chorus(&history, &[], &c, full - 1, None).unwrap_err();
        let ContextError::DoesNotFit { needed, budget, .. } = err else {
            panic!("{model}: {err}")
        };
        assert_eq!((needed, budget), (full, full - 1), "{model}");
        // At the exact budget everything is kept.
        let t = trim_chorus(&history, &[], &c, full, None).unwrap();
        assert_eq!(t.messages.len(), 3, "{model}");
        assert!(t.report.tokens_after <= full, "{model}");
    }
}

#[test]
fn appending_reuses_cached_counts() {
    let c = counter();
    let mut history = History::new(c.clone(), &[]).unwrap();
    let mut all = Vec::new();
    for i in 0..40 {
        let m = msg(
            if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            },
            &format!("m{i}"),
            "some words here",
        );
        all.push(m.clone());
        history.push(m).unwrap();
    }
    assert_eq!(history.total(), c.count_messages(&all).unwrap().total);
    let plan = history.plan(100, None).unwrap();
    let t = history.apply(&plan, None).unwrap();
    assert_eq!(
        c.count_messages(&t.messages).unwrap().total,
        plan.tokens_after
    );
    assert!(plan.tokens_after <= 100);
    assert_eq!(t.messages.last().unwrap().id.as_deref(), Some("m39"));
}

/// One generated step of a turn.
#[derive(Debug, Clone)]
enum Step {
    Say(usize),
    Calls(Vec<usize>),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..40).prop_map(Step::Say),
        prop::collection::vec(1usize..60, 1..4).prop_map(Step::Calls),
    ]
}

/// Turns: (user words, has image, steps); a data message after turn `data_at`.
fn conversation() -> impl Strategy<Value = Vec<Message>> {
    (
        prop::collection::vec(
            (
                1usize..30,
                any::<bool>(),
                prop::collection::vec(step(), 0..4),
            ),
            1..7,
        ),
        0usize..8,
        1usize..20,
    )
        .prop_map(|(turns, data_at, last_words)| {
            let mut out = vec![msg(Role::System, "sys", "You help.")];
            let mut n = 0;
            let mut next = |prefix: &str| {
                n += 1;
                format!("{prefix}{n}")
            };
            for (t, (words, with_image, steps)) in turns.into_iter().enumerate() {
                let text = "word ".repeat(words);
                out.push(if with_image {
                    image(&next("u"), &text)
                } else {
                    msg(Role::User, &next("u"), &text)
                });
                for s in steps {
                    match s {
                        Step::Say(w) => {
                            out.push(msg(Role::Assistant, &next("a"), &"reply ".repeat(w)))
                        }
                        Step::Calls(sizes) => {
                            let ids: Vec<String> = sizes.iter().map(|_| next("call_")).collect();
                            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
                            out.push(call(&next("c"), &refs));
                            for (id, size) in ids.iter().zip(sizes) {
                                out.push(result(&next("r"), id, &"out ".repeat(size)));
                            }
                        }
                    }
                }
                if t == data_at {
                    out.push(data_message(&next("d")));
                }
            }
            out.push(msg(Role::User, &next("u"), &"last ".repeat(last_words)));
            out
        })
}

fn is_pinned(m: &Message) -> bool {
    matches!(m.role, Role::System | Role::Developer)
        || matches!(m.content(), Some(Content::Parts(p)) if p.iter().any(|p| matches!(p, ContentPart::Data(_))))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn chorus_trimming_keeps_its_promises(history in conversation(), budget in 20usize..2500) {
        let c = counter();
        match trim_chorus(&history, &[], &c, budget, None) {
            Ok(t) => {
                // Fits, and the report says the truth.
                let total = c.count_messages(&t.messages).unwrap().total;
                prop_assert!(total <= budget);
                prop_assert_eq!(total, t.report.tokens_after);
                // Order kept: kept ids are a subsequence of the input's.
                let kept = ids(&t.messages);
                let mut input = ids(&history).into_iter();
                prop_assert!(kept.iter().all(|k| input.any(|i| &i == k)));
                // Pinned kept.
                let kept_set: HashSet<&String> = kept.iter().collect();
                for m in history.iter().filter(|m| is_pinned(m)) {
                    prop_assert!(kept_set.contains(m.id.as_ref().unwrap()));
                }
                // No orphans either way.
                let calls: HashSet<&str> = t.messages.iter().flat_map(|m| m.calls()).map(|c| c.id.as_str()).collect();
                let answered: HashSet<&str> = t.messages.iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
                prop_assert_eq!(&calls, &answered);
                // The newest message is always there.
                prop_assert_eq!(kept.last(), history.last().unwrap().id.as_ref());
                // Media of older messages go before any message: once something is dropped, no
                // kept message but the newest still holds an image.
                if !t.report.dropped.is_empty() {
                    let with_image = t.messages[..t.messages.len() - 1].iter().filter(|m| {
                        matches!(m.content(), Some(Content::Parts(p)) if p.iter().any(|p| matches!(p, ContentPart::Image(_))))
                    });
                    prop_assert_eq!(with_image.count(), 0);
                }
                // Oldest first: what is kept of the droppable messages is a suffix of them.
                let droppable: Vec<String> = history.iter().filter(|m| !is_pinned(m)).map(|m| m.id.clone().unwrap()).collect();
                let kept_droppable: Vec<&String> = kept.iter().filter(|k| droppable.contains(k)).collect();
                let suffix: Vec<&String> = droppable[droppable.len() - kept_droppable.len()..].iter().collect();
                prop_assert_eq!(kept_droppable, suffix);
            }
            Err(ContextError::DoesNotFit { needed, budget: b, .. }) => {
                // Fails only when pinned messages and the newest message alone exceed the budget.
                let mut floor: Vec<Message> = history.iter().filter(|m| is_pinned(m)).cloned().collect();
                floor.push(history.last().unwrap().clone());
                let floor = c.count_messages(&floor).unwrap().total;
                prop_assert_eq!(needed, floor);
                prop_assert!(b < floor);
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
        }
    }
}
