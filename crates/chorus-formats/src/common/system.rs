//! System and developer messages on targets that take the system text apart from the turns
//! (Anthropic's top-level `system`, Gemini's `system_instruction`).

use chorus_core::{Message, Role};

use crate::common::json::child;
use crate::loss::{Losses, Policy};

/// What a target says, in loss reports, about messages written into its system slot.
pub struct Slot {
    /// A developer message written as system text.
    pub developer: &'static str,
    /// A system message that came after the first turn.
    pub moved: &'static str,
    /// A system message after another one.
    pub merged: &'static str,
    /// A system message with missing or null content.
    pub no_content: &'static str,
}

/// Reports what writing the system or developer message `m` (at `at`) into the slot changes;
/// `after_turns` when a turn was written before it, `after_system` when a system message was.
pub fn report(
    m: &Message,
    at: &str,
    after_turns: bool,
    after_system: bool,
    slot: &Slot,
    losses: &mut Losses,
) {
    if m.role == Role::Developer {
        losses.push(child(at, "role"), Policy::Downgraded, slot.developer);
    }
    if after_turns {
        losses.push(at, Policy::Moved, slot.moved);
    } else if after_system {
        losses.push(at, Policy::Merged, slot.merged);
    }
    if m.content().is_none() {
        losses.push(child(at, "content"), Policy::Downgraded, slot.no_content);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::Nullable;

    const SLOT: Slot = Slot {
        developer: "developer",
        moved: "moved",
        merged: "merged",
        no_content: "empty",
    };

    fn report_of(m: &Message, after_turns: bool, after_system: bool) -> Vec<(String, String)> {
        let mut losses = Losses::default();
        report(
            m,
            "/messages/3",
            after_turns,
            after_system,
            &SLOT,
            &mut losses,
        );
        let losses = losses.finish(()).losses;
        losses.into_iter().map(|l| (l.path, l.what)).collect()
    }

    #[test]
    fn a_late_developer_message_without_content_reports_each_change_in_order() {
        let mut m = Message::new(Role::Developer, "");
        m.content = Nullable::Absent;
        assert_eq!(
            report_of(&m, true, true),
            [
                ("/messages/3/role".to_owned(), "developer".to_owned()),
                ("/messages/3".to_owned(), "moved".to_owned()),
                ("/messages/3/content".to_owned(), "empty".to_owned()),
            ]
        );
    }

    #[test]
    fn a_second_system_message_before_the_turns_is_merged() {
        let m = Message::new(Role::System, "be brief");
        assert_eq!(
            report_of(&m, false, true),
            [("/messages/3".to_owned(), "merged".to_owned())]
        );
        assert!(report_of(&m, false, false).is_empty());
    }
}
