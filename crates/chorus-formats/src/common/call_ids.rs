//! Calls without ids, and results without a `tool_call_id`, as chat templates take them: calls get
//! fresh ids and results are paired with the calls before them in order.

use std::collections::HashSet;

use chorus_core::{Message, Nullable, Role};

/// Gives every call without an id (an empty one) a fresh id, `call_N` after its position among
/// all calls, and pairs each result without a `tool_call_id` with the first unanswered call of
/// the last assistant turn with calls (the first of that function's calls when the result names
/// its function), as chat templates pair them: by order.
pub fn fill(messages: &mut [Message]) {
    if !messages.iter().any(missing) {
        return;
    }
    let mut taken: HashSet<String> = messages
        .iter()
        .flat_map(|m| m.calls().iter().map(|c| c.id.clone()))
        .chain(messages.iter().filter_map(|m| m.tool_call_id.clone()))
        .filter(|id| !id.is_empty())
        .collect();
    let mut position = 0;
    let mut open: Vec<(String, String)> = Vec::new();
    for m in messages.iter_mut() {
        match (m.role, &mut m.tool_calls) {
            (Role::Assistant, Nullable::Value(calls)) if !calls.is_empty() => {
                open.clear();
                for call in calls {
                    if call.id.is_empty() {
                        call.id = fresh(position, &mut taken);
                    }
                    position += 1;
                    open.push((call.id.clone(), call.function.name.clone()));
                }
            }
            (Role::Tool, _) => match m.tool_call_id.as_deref() {
                Some(id) if !id.is_empty() => open.retain(|(open_id, _)| open_id != id),
                _ => {
                    let by_name = m
                        .name
                        .as_deref()
                        .and_then(|name| open.iter().position(|(_, f)| f == name));
                    if let Some(k) = by_name.or((!open.is_empty()).then_some(0)) {
                        m.tool_call_id = Some(open.remove(k).0);
                    }
                }
            },
            _ => position += m.calls().len(),
        }
    }
}

/// Whether a message has a call without an id or is a result without a `tool_call_id`.
fn missing(m: &Message) -> bool {
    m.calls().iter().any(|c| c.id.is_empty())
        || (m.role == Role::Tool && m.tool_call_id.as_deref().is_none_or(str::is_empty))
}

/// The id parsing gives the `n`-th call of a conversation in formats without call ids.
pub fn numbered(n: usize) -> String {
    format!("call_{n}")
}

/// `call_N`, or `call_N_K` when the conversation already uses that id.
fn fresh(position: usize, taken: &mut HashSet<String>) -> String {
    let mut id = numbered(position);
    let mut k = 1;
    while taken.contains(&id) {
        id = format!("call_{position}_{k}");
        k += 1;
    }
    taken.insert(id.clone());
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::ToolCall;
    use serde_json::json;

    fn assistant(calls: &[(&str, &str)]) -> Message {
        let mut m = Message::new(Role::Assistant, "");
        m.tool_calls = Nullable::Value(
            calls
                .iter()
                .map(|(id, name)| ToolCall::function(*id, *name, &json!({})))
                .collect(),
        );
        m
    }

    fn result(id: Option<&str>, name: Option<&str>) -> Message {
        let mut m = Message::new(Role::Tool, "ok");
        m.tool_call_id = id.map(Into::into);
        m.name = name.map(Into::into);
        m
    }

    #[test]
    fn calls_get_ids_and_results_pair_in_order() {
        let mut messages = vec![
            Message::new(Role::User, "q"),
            assistant(&[("", "a"), ("", "b")]),
            result(None, None),
            result(None, None),
            assistant(&[("", "a")]),
            result(None, None),
        ];
        fill(&mut messages);
        let ids: Vec<_> = messages
            .iter()
            .flat_map(|m| m.calls().iter().map(|c| c.id.clone()))
            .collect();
        assert_eq!(ids, ["call_0", "call_1", "call_2"]);
        let answers: Vec<_> = messages
            .iter()
            .filter_map(|m| m.tool_call_id.clone())
            .collect();
        assert_eq!(answers, ["call_0", "call_1", "call_2"]);
    }

    #[test]
    fn a_named_result_takes_its_function_and_given_ids_are_kept() {
        let mut messages = vec![
            assistant(&[("call_1", "a"), ("", "b")]),
            result(None, Some("b")),
            result(Some("call_1"), None),
            result(None, None),
        ];
        fill(&mut messages);
        // call_1 is taken, so the second call (position 1) gets call_1_1.
        assert_eq!(messages[0].calls()[1].id, "call_1_1");
        assert_eq!(messages[1].tool_call_id.as_deref(), Some("call_1_1"));
        assert_eq!(messages[2].tool_call_id.as_deref(), Some("call_1"));
        // A result with no call left stays unpaired.
        assert_eq!(messages[3].tool_call_id, None);
    }
}
