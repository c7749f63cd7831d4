//! Speaker names for targets without a `name` field: prefix the text, or fold into `<history>`.

use chorus_core::{Content, ContentPart, Message, Role};

use crate::loss::{Losses, Policy};
use crate::options::NamePolicy;

/// The opening of a folded history message.
pub const HISTORY_HEADER: &str = "Earlier turns of this multi-agent conversation, one line per turn as `speaker: text`:\n<history>\n";

/// Applies `policy` to messages given as `(original index, message)`; names are removed.
pub fn apply(
    messages: Vec<(usize, Message)>,
    policy: NamePolicy,
    losses: &mut Losses,
) -> Vec<(usize, Message)> {
    let mut out: Vec<(usize, Message)> = Vec::with_capacity(messages.len());
    let mut folding: Option<(usize, String)> = None;
    for (index, mut message) in messages {
        if message.role == Role::Tool {
            // A tool message's `name` is the function's name, which codecs handle themselves.
            out.push((index, message));
            continue;
        }
        if policy == NamePolicy::History && foldable(&message) {
            let name = message.name.take().unwrap_or_default();
            let fold = folding.get_or_insert_with(|| (index, HISTORY_HEADER.to_owned()));
            fold.1
                .push_str(&format!("{name}: {}\n", message.text_joined("\n")));
            losses.push(
                format!("/messages/{index}"),
                Policy::Folded,
                "turn folded into a <history> user message",
            );
            continue;
        }
        if let Some((at, text)) = folding.take() {
            out.push((at, Message::new(Role::User, text + "</history>")));
        }
        if let Some(name) = message.name.take() {
            if matches!(message.role, Role::System | Role::Developer) {
                // Instructions are nobody's turn: `system: ` would become part of them.
                losses.push(
                    format!("/messages/{index}/name"),
                    Policy::Dropped,
                    "the name of a system or developer message is not written into the instructions",
                );
            } else {
                prefix(&mut message, index, &name, losses);
            }
        }
        out.push((index, message));
    }
    if let Some((at, text)) = folding {
        out.push((at, Message::new(Role::User, text + "</history>")));
    }
    out
}

fn foldable(message: &Message) -> bool {
    message.name.is_some()
        && matches!(message.role, Role::User | Role::Assistant)
        && message.calls().is_empty()
        && match message.content() {
            Some(Content::Text(_)) => true,
            Some(Content::Parts(parts)) => parts.iter().all(|p| matches!(p, ContentPart::Text(_))),
            None => false,
        }
}

fn prefix(message: &mut Message, index: usize, name: &str, losses: &mut Losses) {
    let path = format!("/messages/{index}/name");
    let done = match message.content.value_mut() {
        Some(Content::Text(text)) => {
            text.insert_str(0, &format!("{name}: "));
            true
        }
        Some(Content::Parts(parts)) => match parts.iter_mut().find_map(|p| match p {
            ContentPart::Text(t) => Some(t),
            _ => None,
        }) {
            Some(t) => {
                t.text.insert_str(0, &format!("{name}: "));
                true
            }
            None => false,
        },
        None => false,
    };
    if done {
        losses.push(
            path,
            Policy::Prefixed,
            format!("speaker written as `{name}: ` before the text"),
        );
    } else {
        losses.push(
            path,
            Policy::Dropped,
            "the target has no speaker names and the message has no text to prefix",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(role: Role, name: &str, text: &str) -> (usize, Message) {
        let mut m = Message::new(role, text);
        m.name = Some(name.into());
        (0, m)
    }

    #[test]
    fn prefix_writes_the_speaker_into_the_text() {
        let mut losses = Losses::default();
        let out = apply(
            vec![named(Role::Assistant, "Alice", "hi")],
            NamePolicy::Prefix,
            &mut losses,
        );
        assert_eq!(out[0].1.text(), "Alice: hi");
        assert_eq!(out[0].1.name, None);
        assert_eq!(losses.finish(()).losses[0].policy, Policy::Prefixed);
    }

    #[test]
    fn history_folds_a_run_of_named_turns() {
        let mut losses = Losses::default();
        let mut input = vec![
            named(Role::Assistant, "Alice", "hi"),
            named(Role::User, "Bob", "yo"),
        ];
        input[1].0 = 1;
        input.push((2, Message::new(Role::User, "go")));
        let out = apply(input, NamePolicy::History, &mut losses);
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0].1.text(),
            format!("{HISTORY_HEADER}Alice: hi\nBob: yo\n</history>")
        );
        assert_eq!(out[1].1.text(), "go");
        assert_eq!(losses.finish(()).losses.len(), 2);
    }

    #[test]
    fn a_system_message_gets_no_speaker_prefix() {
        let mut losses = Losses::default();
        let out = apply(
            vec![named(Role::System, "system", "Be brief.")],
            NamePolicy::Prefix,
            &mut losses,
        );
        assert_eq!(out[0].1.text(), "Be brief.");
        assert_eq!(out[0].1.name, None);
        let losses = losses.finish(()).losses;
        assert_eq!(losses[0].policy, Policy::Dropped);
        assert_eq!(losses[0].path, "/messages/0/name");
    }

    #[test]
    fn a_folded_turn_keeps_its_text_blocks_apart() {
        let mut losses = Losses::default();
        let mut turn = Message::with_parts(
            Role::Assistant,
            vec![ContentPart::text("Sunny"), ContentPart::text("22 degrees")],
        );
        turn.name = Some("weather".into());
        let out = apply(vec![(0, turn)], NamePolicy::History, &mut losses);
        assert_eq!(
            out[0].1.text(),
            format!("{HISTORY_HEADER}weather: Sunny\n22 degrees\n</history>")
        );
    }
}
