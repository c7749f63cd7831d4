//! Keeps tool calls and their results together: results are placed right after their call.

use std::collections::HashSet;

use chorus_core::{Message, Nullable, Role};

use crate::loss::{Losses, Policy};

/// The message order for a target that needs results right after their call: indices into
/// `messages`. A result found later than the run after its call is moved up (and reported).
pub fn paired_order(messages: &[Message], losses: &mut Losses) -> Vec<usize> {
    let mut order = Vec::with_capacity(messages.len());
    let mut placed = vec![false; messages.len()];
    for i in 0..messages.len() {
        if placed[i] {
            continue;
        }
        placed[i] = true;
        order.push(i);
        let calls = messages[i].calls();
        if messages[i].role != Role::Assistant || calls.is_empty() {
            continue;
        }
        let mut open: HashSet<&str> = calls.iter().map(|c| c.id.as_str()).collect();
        let mut j = i + 1;
        while j < messages.len() && !open.is_empty() && answers(&messages[j], &open) {
            open.remove(messages[j].tool_call_id.as_deref().unwrap_or_default());
            placed[j] = true;
            order.push(j);
            j += 1;
        }
        for (k, later) in messages.iter().enumerate().skip(j) {
            if open.is_empty() {
                break;
            }
            if !placed[k] && answers(later, &open) {
                open.remove(later.tool_call_id.as_deref().unwrap_or_default());
                placed[k] = true;
                order.push(k);
                losses.push(
                    format!("/messages/{k}"),
                    Policy::Moved,
                    format!("tool result moved up to follow its call in message {i}"),
                );
            }
        }
    }
    order
}

/// The messages in [`paired_order`], as `(original index, message)`, without what providers that
/// check pairing reject (Anthropic, Gemini, Responses): a result that answers no earlier call
/// (or answers one a second time) is dropped, and so is a call that gets no result; an assistant
/// message left with neither calls nor content goes too. Each drop is reported.
pub fn without_orphans(messages: &[Message], losses: &mut Losses) -> Vec<(usize, Message)> {
    let order = paired_order(messages, losses);
    let mut called: HashSet<&str> = HashSet::new();
    let mut answered: HashSet<&str> = HashSet::new();
    let mut keep = vec![true; messages.len()];
    for &i in &order {
        let m = &messages[i];
        called.extend(m.calls().iter().map(|c| c.id.as_str()));
        if m.role != Role::Tool {
            continue;
        }
        match m.tool_call_id.as_deref() {
            Some(id) if called.contains(id) && answered.insert(id) => {}
            _ => {
                keep[i] = false;
                losses.push(
                    format!("/messages/{i}"),
                    Policy::Dropped,
                    "a tool result that answers no earlier call (the provider would refuse it)",
                );
            }
        }
    }
    let mut out = Vec::with_capacity(order.len());
    for i in order {
        if !keep[i] {
            continue;
        }
        let mut m = messages[i].clone();
        if let Nullable::Value(calls) = &mut m.tool_calls {
            let before = calls.len();
            let mut k = 0;
            calls.retain(|c| {
                let kept = answered.contains(c.id.as_str());
                if !kept {
                    losses.push(
                        format!("/messages/{i}/tool_calls/{k}"),
                        Policy::Dropped,
                        "a call without a result (the provider would refuse it)",
                    );
                }
                k += 1;
                kept
            });
            if before > 0 && calls.is_empty() {
                m.tool_calls = Nullable::Absent;
                if m.parts()
                    .iter()
                    .all(|p| p.as_text().is_some_and(str::is_empty))
                {
                    losses.push(
                        format!("/messages/{i}"),
                        Policy::Dropped,
                        "an assistant message left with no calls and no content",
                    );
                    continue;
                }
            }
        }
        out.push((i, m));
    }
    out
}

fn answers(message: &Message, open: &HashSet<&str>) -> bool {
    message.role == Role::Tool
        && message
            .tool_call_id
            .as_deref()
            .is_some_and(|id| open.contains(id))
}

/// Whether every call has a result and every result a call (the invariant codecs keep).
pub fn is_paired(messages: &[Message]) -> bool {
    let calls: HashSet<&str> = messages
        .iter()
        .flat_map(|m| m.calls().iter().map(|c| c.id.as_str()))
        .collect();
    let results: HashSet<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    calls == results
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::ToolCall;
    use serde_json::json;

    fn call(ids: &[&str]) -> Message {
        let mut m = Message::new(Role::Assistant, "");
        m.tool_calls = Nullable::Value(
            ids.iter()
                .map(|id| ToolCall::function(*id, "f", &json!({})))
                .collect(),
        );
        m
    }

    fn result(id: &str) -> Message {
        let mut m = Message::new(Role::Tool, "ok");
        m.tool_call_id = Some(id.into());
        m
    }

    #[test]
    fn a_late_result_is_moved_up_and_reported() {
        let messages = vec![
            call(&["a", "b"]),
            result("a"),
            Message::new(Role::User, "hi"),
            result("b"),
        ];
        let mut losses = Losses::default();
        assert_eq!(paired_order(&messages, &mut losses), [0, 1, 3, 2]);
        let losses = losses.finish(()).losses;
        assert_eq!(losses.len(), 1);
        assert_eq!(losses[0].path, "/messages/3");
        assert!(is_paired(&messages));
    }

    #[test]
    fn orphan_results_and_unanswered_calls_are_dropped_and_reported() {
        let messages = vec![
            result("early"),
            call(&["a", "b"]),
            result("a"),
            result("a"),
            Message::new(Role::User, "hi"),
            call(&["c"]),
        ];
        let mut losses = Losses::default();
        let out = without_orphans(&messages, &mut losses);
        let kept: Vec<usize> = out.iter().map(|(i, _)| *i).collect();
        assert_eq!(kept, [1, 2, 4]);
        assert_eq!(out[0].1.calls().len(), 1);
        assert!(is_paired(
            &out.into_iter().map(|(_, m)| m).collect::<Vec<_>>()
        ));
        let paths: Vec<String> = losses
            .finish(())
            .losses
            .into_iter()
            .map(|l| l.path)
            .collect();
        assert_eq!(
            paths,
            [
                "/messages/0",
                "/messages/3",
                "/messages/1/tool_calls/1",
                "/messages/5/tool_calls/0",
                "/messages/5"
            ]
        );
    }

    #[test]
    fn adjacent_results_are_not_reported() {
        let messages = vec![call(&["a"]), result("a"), Message::new(Role::User, "hi")];
        let mut losses = Losses::default();
        assert_eq!(paired_order(&messages, &mut losses), [0, 1, 2]);
        assert!(losses.finish(()).losses.is_empty());
        assert!(!is_paired(&messages[..1]));
    }
}
