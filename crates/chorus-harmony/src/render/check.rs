//! The header allow-list: what may appear in roles' names, recipients, channels and content types.
//!
//! Header fields are written as text between special tokens, so a field holding `<|`, spaces or
//! line breaks could forge a header. Names and recipients may hold ASCII letters, digits and
//! `_ - . : / @`; channels must be `analysis`, `commentary`, `final` or listed in a system
//! message's valid channels; content types are `<|constrain|>` plus a word, or a word
//! (letters, digits and `_ - . + /`).

use crate::model::{Content, Message};

/// A message that cannot be rendered; names the JSON pointer, what was expected and found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: expected {expected}, found {found}{}", hint.as_ref().map(|h| format!(" (hint: {h})")).unwrap_or_default())]
pub struct RenderError {
    /// JSON pointer of the offending value (`/messages/3/recipient`).
    pub pointer: String,
    /// What was expected.
    pub expected: String,
    /// What was found.
    pub found: String,
    /// How to fix a common mistake, when known.
    pub hint: Option<String>,
}

impl RenderError {
    /// A new error.
    pub fn new(
        pointer: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
        hint: Option<&str>,
    ) -> Self {
        Self {
            pointer: pointer.into(),
            expected: expected.into(),
            found: found.into(),
            hint: hint.map(str::to_string),
        }
    }
}

/// The channels every conversation may use.
pub const STANDARD_CHANNELS: [&str; 3] = ["analysis", "commentary", "final"];

/// Checks every message's header fields against the allow-list.
pub fn check_conversation(messages: &[Message]) -> Result<(), RenderError> {
    let declared: Vec<&str> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|c| match c {
            Content::SystemContent(system) => system.channel_config.as_ref(),
            _ => None,
        })
        .flat_map(|config| config.valid_channels.iter().map(String::as_str))
        .filter(|channel| is_word(channel, "_-"))
        .collect();
    for (index, message) in messages.iter().enumerate() {
        if let Some(name) = &message.author.name {
            check_identifier(index, "name", name)?;
        }
        if let Some(recipient) = &message.recipient {
            check_identifier(index, "recipient", recipient)?;
        }
        if let Some(channel) = &message.channel
            && !STANDARD_CHANNELS.contains(&channel.as_str())
            && !declared.contains(&channel.as_str())
        {
            return Err(RenderError::new(
                format!("/messages/{index}/channel"),
                "analysis, commentary, final or a channel listed in the system message",
                format!("{channel:?}"),
                Some("tool calls go on \"commentary\", answers on \"final\""),
            ));
        }
        if let Some(content_type) = &message.content_type {
            let word = content_type
                .strip_prefix("<|constrain|>")
                .unwrap_or(content_type);
            if !is_word(word, "_-.+/") {
                return Err(RenderError::new(
                    format!("/messages/{index}/content_type"),
                    "a content type such as \"<|constrain|>json\" or \"code\"",
                    format!("{content_type:?}"),
                    None,
                ));
            }
        }
    }
    Ok(())
}

fn check_identifier(index: usize, field: &str, value: &str) -> Result<(), RenderError> {
    if is_word(value, "_-.:/@") {
        return Ok(());
    }
    Err(RenderError::new(
        format!("/messages/{index}/{field}"),
        "ASCII letters, digits and _ - . : / @ (e.g. \"functions.lookup_weather\")",
        format!("{value:?}"),
        value
            .starts_with("to=")
            .then_some("write the recipient without the \"to=\" prefix"),
    ))
}

/// Whether `value` is non-empty and made of ASCII letters, digits and `extra`.
fn is_word(value: &str, extra: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, SystemContent};

    #[test]
    fn forged_headers_are_rejected_with_the_field() {
        let bad = Message::new(Role::Assistant, "x").with_recipient("functions.x<|message|>");
        let err = check_conversation(&[bad]).unwrap_err();
        assert_eq!(err.pointer, "/messages/0/recipient");
        let bad = Message::new(Role::Assistant, "x").with_channel("final <|end|>");
        assert_eq!(
            check_conversation(&[bad]).unwrap_err().pointer,
            "/messages/0/channel"
        );
        let bad = Message::new(Role::Assistant, "x").with_content_type("json x");
        assert_eq!(
            check_conversation(&[bad]).unwrap_err().pointer,
            "/messages/0/content_type"
        );
        let bad = Message::new(Role::Assistant, "x").with_recipient("to=functions.f");
        assert!(
            check_conversation(&[bad])
                .unwrap_err()
                .to_string()
                .contains("without the \"to=\" prefix")
        );
    }

    #[test]
    fn channels_declared_by_the_system_message_are_allowed() {
        let mut system = SystemContent::default();
        system
            .channel_config
            .as_mut()
            .unwrap()
            .valid_channels
            .push("notes".into());
        let messages = [
            Message::new(Role::System, system),
            Message::new(Role::Assistant, "x")
                .with_channel("notes")
                .with_content_type("<|constrain|>json"),
        ];
        assert_eq!(check_conversation(&messages), Ok(()));
    }
}
