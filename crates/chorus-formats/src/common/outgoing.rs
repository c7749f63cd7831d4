//! The opening steps of an encoder: the messages it writes, in the order its target needs, with
//! speaker names handled for targets that have no `name` field.

use chorus_core::{Conversation, Message};

use crate::common::names;
use crate::common::pairing::{paired_order, without_orphans};
use crate::loss::Losses;
use crate::options::NamePolicy;

/// Where a target needs tool results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// Anywhere: the messages stay in the order given.
    AsGiven,
    /// Right after their call (a late result is moved up and reported).
    Paired,
    /// Right after their call, and only results that answer a call and calls that get a result
    /// (what providers that check pairing accept; each drop is reported).
    WithoutOrphans,
}

/// The messages to write as `(index in the input, message)`: ordered for `pairing`, then with
/// speaker names handled by `policy` (names are removed).
pub fn unnamed(
    conversation: &Conversation,
    pairing: Pairing,
    policy: NamePolicy,
    losses: &mut Losses,
) -> Vec<(usize, Message)> {
    let messages = &conversation.messages;
    let ordered = match pairing {
        Pairing::AsGiven => messages.iter().cloned().enumerate().collect(),
        Pairing::Paired => paired_order(messages, losses)
            .into_iter()
            .map(|i| (i, messages[i].clone()))
            .collect(),
        Pairing::WithoutOrphans => without_orphans(messages, losses),
    };
    names::apply(ordered, policy, losses)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::{Nullable, Role, ToolCall};
    use serde_json::json;

    fn conversation() -> Conversation {
        let mut call = Message::new(Role::Assistant, "");
        call.tool_calls = Nullable::Value(vec![ToolCall::function("a", "f", &json!({}))]);
        let mut result = Message::new(Role::Tool, "ok");
        result.tool_call_id = Some("a".into());
        let mut alice = Message::new(Role::User, "hi");
        alice.name = Some("alice".into());
        Conversation {
            messages: vec![call, alice, result],
            ..Conversation::default()
        }
    }

    #[test]
    fn each_pairing_orders_and_every_one_removes_names() {
        for (pairing, order) in [
            (Pairing::AsGiven, [0, 1, 2]),
            (Pairing::Paired, [0, 2, 1]),
            (Pairing::WithoutOrphans, [0, 2, 1]),
        ] {
            let mut losses = Losses::default();
            let out = unnamed(&conversation(), pairing, NamePolicy::Prefix, &mut losses);
            let indices: Vec<usize> = out.iter().map(|(i, _)| *i).collect();
            assert_eq!(indices, order, "{pairing:?}");
            assert!(out.iter().all(|(_, m)| m.name.is_none()), "{pairing:?}");
            let alice = out.iter().find(|(i, _)| *i == 1).unwrap();
            assert_eq!(alice.1.text(), "alice: hi");
        }
    }
}
