//! Keeps tool calls and their results together: results are placed right after their call.

use std::collections::HashSet;

use chorus_core::{Message, Role};

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
        m.tool_calls = Some(Some(
            ids.iter()
                .map(|id| ToolCall::function(*id, "f", &json!({})))
                .collect(),
        ));
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
    fn adjacent_results_are_not_reported() {
        let messages = vec![call(&["a"]), result("a"), Message::new(Role::User, "hi")];
        let mut losses = Losses::default();
        assert_eq!(paired_order(&messages, &mut losses), [0, 1, 2]);
        assert!(losses.finish(()).losses.is_empty());
        assert!(!is_paired(&messages[..1]));
    }
}
