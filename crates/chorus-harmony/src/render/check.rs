//! The header check: what may appear in roles' names, recipients, channels and content types.
//!
//! The reference renders any text in these fields, and so does chorus, with one exception: a
//! field that spells a special token (`<|end|>` in a recipient) is refused, because the text
//! would read back as a control token. A content type may start with `<|constrain|>`, which is
//! rendered as the special token. With `strict_channels`, a channel that the system message
//! does not list (the standard three when no system message lists any) is refused as well.

use chorus_core::Problem;

use crate::model::{Content, Message};
use crate::tokens;

/// The channels every conversation may use.
pub(crate) const STANDARD_CHANNELS: [&str; 3] = ["analysis", "commentary", "final"];

const CONSTRAIN_MARK: &str = "<|constrain|>";

/// Checks every message's header fields; see the module documentation.
pub(crate) fn check_conversation(
    messages: &[Message],
    strict_channels: bool,
) -> Result<(), Problem> {
    let declared = if strict_channels {
        declared_channels(messages)
    } else {
        Vec::new()
    };
    for (index, message) in messages.iter().enumerate() {
        if let Some(name) = &message.author.name {
            check_no_special(index, "name", name, name)?;
        }
        if let Some(recipient) = &message.recipient {
            check_no_special(index, "recipient", recipient, recipient)?;
        }
        if let Some(channel) = &message.channel {
            check_no_special(index, "channel", channel, channel)?;
            if strict_channels && !declared.contains(&channel.as_str()) {
                return Err(Problem::expected(
                    format!("/messages/{index}/channel"),
                    format!(
                        "a channel the system message lists ({})",
                        declared.join(", ")
                    ),
                    format!("{channel:?}")).with_hint(
                        "tool calls go on \"commentary\", answers on \"final\"; or leave strict channels off to render it as the reference does",
                    ));
            }
        }
        if let Some(content_type) = &message.content_type {
            let rest = content_type
                .strip_prefix(CONSTRAIN_MARK)
                .unwrap_or(content_type);
            check_no_special(index, "content_type", content_type, rest)?;
        }
    }
    Ok(())
}

/// The channels listed by the conversation's system messages, or the standard three when none
/// lists any.
fn declared_channels(messages: &[Message]) -> Vec<&str> {
    let declared: Vec<&str> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|c| match c {
            Content::SystemContent(system) => system.channel_config.as_ref(),
            _ => None,
        })
        .flat_map(|config| config.valid_channels.iter().map(String::as_str))
        .collect();
    if declared.is_empty() {
        STANDARD_CHANNELS.to_vec()
    } else {
        declared
    }
}

/// Refuses `checked` (part of the field's `value`) when it spells a special token.
fn check_no_special(index: usize, field: &str, value: &str, checked: &str) -> Result<(), Problem> {
    let Some(special) = tokens::find_special_text(checked) else {
        return Ok(());
    };
    Err(Problem::expected(
        format!("/messages/{index}/{field}"),
        "header text without special-token text",
        format!("{value:?}, which spells the special token {special}")).with_hint(
            "header fields are written as text between control tokens; a special token's name there would read back as a control token",
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, SystemContent};

    #[test]
    fn special_token_text_is_refused_with_the_field() {
        let bad = Message::new(Role::Assistant, "x").with_recipient("functions.x<|message|>");
        let err = check_conversation(&[bad], false).unwrap_err();
        assert_eq!(err.pointer, "/messages/0/recipient");
        assert!(err.to_string().contains("<|message|>"), "{err}");
        let bad = Message::new(Role::Assistant, "x").with_channel("final <|end|>");
        assert_eq!(
            check_conversation(&[bad], false).unwrap_err().pointer,
            "/messages/0/channel"
        );
        let bad =
            Message::new(Role::Assistant, "x").with_content_type("<|constrain|><|constrain|>json");
        assert_eq!(
            check_conversation(&[bad], false).unwrap_err().pointer,
            "/messages/0/content_type"
        );
        let bad = Message::from_tool("functions.f<|reserved_200013|>", "x");
        assert_eq!(
            check_conversation(&[bad], false).unwrap_err().pointer,
            "/messages/0/name"
        );
    }

    #[test]
    fn any_other_text_is_accepted() {
        let messages = [
            Message::new(Role::User, "x").with_recipient("Алиса"),
            Message::from_tool("functions.未来天气", "x").with_channel("zoë 😀"),
            Message::new(Role::Assistant, "x")
                .with_recipient("functions.поиск")
                .with_content_type("<|constrain|>"),
            Message::new(Role::Assistant, "x").with_content_type("json x <|x|> <|reserved_1|>"),
        ];
        assert_eq!(check_conversation(&messages, false), Ok(()));
    }

    #[test]
    fn strict_channels_follow_the_system_message() {
        let mut system = SystemContent::default();
        let channels = &mut system.channel_config.as_mut().unwrap().valid_channels;
        channels.retain(|c| c != "commentary");
        channels.push("notes".into());
        let conversation = |channel: &str| {
            [
                Message::new(Role::System, system.clone()),
                Message::new(Role::Assistant, "x").with_channel(channel),
            ]
        };
        assert_eq!(check_conversation(&conversation("notes"), true), Ok(()));
        assert_eq!(
            check_conversation(&conversation("commentary"), false),
            Ok(())
        );
        let err = check_conversation(&conversation("commentary"), true).unwrap_err();
        assert_eq!(err.pointer, "/messages/1/channel");
        let alone = [Message::new(Role::Assistant, "x").with_channel("secret")];
        assert!(check_conversation(&alone, true).is_err());
        assert_eq!(check_conversation(&alone[..0], true), Ok(()));
    }
}
