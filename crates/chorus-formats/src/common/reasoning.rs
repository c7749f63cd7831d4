//! Reasoning given beside the content (`reasoning_content`, `<think>`) as a chorus part.

use chorus_core::{Content, ContentPart, Message, Nullable, ReasoningPart};

/// Puts reasoning text in front of the content as a reasoning part.
pub fn prepend(message: &mut Message, reasoning: String) {
    let part = ContentPart::Reasoning(ReasoningPart {
        text: reasoning,
        ..ReasoningPart::default()
    });
    let mut parts = match message.content.take().into_value() {
        None => Vec::new(),
        Some(Content::Text(text)) => vec![ContentPart::text(text)],
        Some(Content::Parts(parts)) => parts,
    };
    parts.insert(0, part);
    message.content = Nullable::Value(Content::Parts(parts));
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::Role;

    #[test]
    fn reasoning_goes_before_text_content() {
        let mut m = Message::new(Role::Assistant, "answer");
        prepend(&mut m, "thought".into());
        let parts = m.parts();
        assert!(matches!(&parts[0], ContentPart::Reasoning(r) if r.text == "thought"));
        assert_eq!(parts[1].as_text(), Some("answer"));
        assert_eq!(parts.len(), 2);
    }
}
