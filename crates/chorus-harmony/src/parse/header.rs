//! Parsing the text of a message header (`assistant to=functions.x<|channel|>commentary <|constrain|>json`).
//!
//! [`strict`] accepts and rejects exactly what openai-harmony 0.0.8 does; [`lenient`] recovers
//! the shapes real gpt-oss output takes and reports what it had to guess.

use chorus_core::Problem;

use crate::model::{Author, Role};
use crate::render::check::STANDARD_CHANNELS;

const CHANNEL_MARK: &str = "<|channel|>";
const CONSTRAIN_MARK: &str = "<|constrain|>";

/// The fields of a parsed header.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Header {
    /// Who wrote the message.
    pub author: Author,
    /// Its recipient.
    pub recipient: Option<String>,
    /// Its channel.
    pub channel: Option<String>,
    /// Its content type.
    pub content_type: Option<String>,
}

/// A header rejected in strict mode; the caller sets its place (the token).
fn header_error(expected: &str, found: impl Into<String>, hint: Option<&'static str>) -> Problem {
    let problem = Problem::expected("", expected, found.into());
    match hint {
        Some(hint) => problem.with_hint(hint),
        None => problem,
    }
}

/// Removes the first `<|channel|>VALUE` (value up to whitespace or `<`); returns the value.
/// With `skip_space`, whitespace between the marker and the value is skipped.
fn take_channel(header: &mut String, replacement: &str, skip_space: bool) -> Option<String> {
    let at = header.find(CHANNEL_MARK)?;
    let mut value_start = at + CHANNEL_MARK.len();
    if skip_space {
        let rest = &header[value_start..];
        let space = rest.len() - rest.trim_start().len();
        let after = &rest[space..];
        if !after.is_empty() && !after.starts_with('<') {
            value_start += space;
        }
    }
    let rest = &header[value_start..];
    let len = rest
        .find(|c: char| c.is_whitespace() || c == '<')
        .unwrap_or(rest.len());
    let value = rest[..len].to_string();
    header.replace_range(at..value_start + len, replacement);
    Some(value)
}

/// Parses a header exactly as the reference does. `role` is the role the prompt already opened.
pub(crate) fn strict(text: &str, role: Option<Role>) -> Result<Header, Problem> {
    let mut header = text.to_string();
    let channel = match take_channel(&mut header, "", false) {
        Some(value) if value.is_empty() => {
            return Err(header_error(
                "a channel name after <|channel|>",
                "nothing",
                Some("write e.g. <|channel|>final"),
            ));
        }
        other => other,
    };
    let mut header = header.trim().to_string();
    if header.contains(CONSTRAIN_MARK) {
        header = header
            .replace(CONSTRAIN_MARK, " <|constrain|>")
            .trim()
            .to_string();
    }
    let mut parts: Vec<&str> = header.split_ascii_whitespace().collect();
    let mut written_role = None;
    let role = match role {
        Some(role) => role,
        None => {
            let Some(&first) = parts.first() else {
                return Err(header_error(
                    "a role at the start of the header",
                    "an empty header",
                    None,
                ));
            };
            written_role = Some(first.to_string());
            match Role::from_name(first) {
                Some(role) => role,
                None if parts.len() > 1 || first.starts_with("to=") => {
                    parts.remove(0);
                    Role::Tool
                }
                None => {
                    return Err(header_error(
                        "a role (system, developer, user, assistant, tool) or a tool name followed by a recipient",
                        format!("{first:?}"),
                        Some("tool results are written as \"functions.x to=assistant\""),
                    ));
                }
            }
        }
    };
    if parts.first() == Some(&role.as_str()) {
        parts.remove(0);
    }
    let (mut recipient, mut content_type) = (None, None);
    if let Some(last) = parts.pop() {
        if let Some(stripped) = last.strip_prefix("to=") {
            recipient = Some(stripped.to_string());
        } else if parts.is_empty() {
            recipient = Some(last.to_string());
        } else {
            content_type = Some(last.to_string());
            let raw = parts.pop().unwrap_or_default();
            recipient = Some(raw.strip_prefix("to=").unwrap_or(raw).to_string());
        }
    }
    if !parts.is_empty() {
        return Err(header_error(
            "at most a role, a recipient, a channel and a content type in the header",
            format!("extra words {:?}", parts.join(" ")),
            None,
        ));
    }
    let name = if role == Role::Tool {
        written_role
    } else {
        None
    };
    Ok(Header {
        author: Author { role, name },
        recipient,
        channel,
        content_type,
    })
}

/// Something the lenient header parser had to guess or repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Repair {
    /// More than one `<|channel|>` marker; the first non-empty value was used.
    DoubledChannel,
    /// `<|channel|>` with no value.
    EmptyChannel,
    /// A channel with trailing garbage (`commentary?`) was cut to the known channel.
    GarbageChannel(String),
    /// A channel that is not analysis, commentary or final was kept as written.
    UnknownChannel(String),
    /// No role was written; assistant was assumed.
    MissingRole,
    /// A header word written with whitespace inside (`<|channel|> final`, `to= functions.x`),
    /// read without it; holds the word as read.
    SpacedWord(String),
    /// A message that opened with a name instead of a role and ended with `<|call|>`: an
    /// assistant's call to that recipient, not a tool's output; holds the name.
    RoleWasRecipient(String),
    /// An analysis-channel message addresses a recipient.
    RecipientOnAnalysis,
    /// Header words that fit no field; kept at the start of the content.
    UnplacedText(String),
}

/// Parses a header leniently. When `content_follows` is false (no `<|message|>` came), words
/// after the header fields are returned as content instead of being read as fields.
pub(crate) fn lenient(
    text: &str,
    role: Option<Role>,
    content_follows: bool,
) -> (Header, String, Vec<Repair>) {
    let mut repairs = Vec::new();
    let mut header = text.to_string();
    let mut channels = Vec::new();
    let spaced = text
        .match_indices(CHANNEL_MARK)
        .map(|(at, _)| &text[at + CHANNEL_MARK.len()..])
        .filter(|rest| rest.starts_with(char::is_whitespace) && !rest.trim_start().is_empty())
        .filter(|rest| !rest.trim_start().starts_with('<'))
        .count();
    while let Some(value) = take_channel(&mut header, " ", true) {
        channels.push(value);
    }
    if channels.len() > 1 {
        repairs.push(Repair::DoubledChannel);
    }
    let channel = match channels.iter().find(|c| !c.is_empty()) {
        Some(raw) => Some(normalize_channel(raw, &mut repairs)),
        None if !channels.is_empty() => {
            repairs.push(Repair::EmptyChannel);
            None
        }
        None => None,
    };
    if spaced > 0
        && let Some(channel) = &channel
    {
        repairs.push(Repair::SpacedWord(format!("{CHANNEL_MARK}{channel}")));
    }
    let header = header.replace(CONSTRAIN_MARK, " <|constrain|>");
    let mut words: Vec<String> = Vec::new();
    for word in header.split_whitespace() {
        match words.last_mut() {
            Some(last) if last == CONSTRAIN_MARK => last.push_str(word),
            _ => words.push(word.to_string()),
        }
    }
    let mut words = words.into_iter().peekable();
    let (role, name) = match (role, words.peek().map(String::as_str)) {
        (Some(role), Some(first)) if first == role.as_str() => {
            words.next();
            (role, None)
        }
        (Some(role), _) => (role, None),
        (None, Some(first)) if Role::from_name(first).is_some() => {
            let role = Role::from_name(first).unwrap_or(Role::Assistant);
            let name = (role == Role::Tool).then(|| first.to_string());
            words.next();
            (role, name)
        }
        (None, Some(first)) if !first.starts_with("to=") && !first.starts_with(CONSTRAIN_MARK) => {
            let name = words.next();
            (Role::Tool, name)
        }
        (None, _) => {
            repairs.push(Repair::MissingRole);
            (Role::Assistant, None)
        }
    };
    let (mut recipient, mut content_type) = (None::<String>, None::<String>);
    let mut unplaced: Vec<String> = Vec::new();
    while let Some(word) = words.next() {
        if !unplaced.is_empty() {
            unplaced.push(word);
        } else if word == "to=" && recipient.is_none() && words.peek().is_some() {
            let to = words.next().unwrap_or_default();
            repairs.push(Repair::SpacedWord(format!("to={to}")));
            recipient = Some(to);
        } else if let Some(to) = word.strip_prefix("to=").filter(|_| recipient.is_none()) {
            recipient = Some(to.to_string());
        } else if word.starts_with(CONSTRAIN_MARK) && content_type.is_none() {
            content_type = Some(word);
        } else if !content_follows {
            unplaced.push(word);
        } else if is_content_type_word(&word) && content_type.is_none() {
            content_type = Some(word);
        } else if recipient.is_none() {
            recipient = Some(word);
        } else if content_type.is_none() {
            content_type = Some(word);
        } else {
            unplaced.push(word);
        }
    }
    if recipient.is_some() && channel.as_deref() == Some("analysis") {
        repairs.push(Repair::RecipientOnAnalysis);
    }
    let mut content = if content_follows {
        let joined = unplaced.join(" ");
        if !joined.is_empty() {
            repairs.push(Repair::UnplacedText(joined.clone()));
        }
        joined
    } else {
        let tail = verbatim_tail(text, &channels, unplaced.first().map(String::as_str));
        if keeps_in_order(&tail, &unplaced) {
            tail
        } else {
            unplaced.join(" ")
        }
    };
    // Further channel values have no field to go to: they stay as text.
    let chosen = channels.iter().find(|c| !c.is_empty());
    let extra: Vec<String> = channels
        .iter()
        .filter(|c| !c.is_empty() && Some(*c) != chosen)
        .map(|c| format!("{CHANNEL_MARK}{c}"))
        .collect();
    if !extra.is_empty() {
        let extra = extra.join(" ");
        repairs.push(Repair::UnplacedText(extra.clone()));
        content = if content.is_empty() {
            extra
        } else {
            format!("{extra} {content}")
        };
    }
    let header = Header {
        author: Author { role, name },
        recipient,
        channel,
        content_type,
    };
    (header, content, repairs)
}

/// The text from `first_word` on, as written (whitespace kept), searched after the header
/// fields (the last channel marker, recipient or content type).
fn verbatim_tail(text: &str, channels: &[String], first_word: Option<&str>) -> String {
    let Some(word) = first_word else {
        return String::new();
    };
    let mut header_end = 0;
    for channel in channels {
        let anchor = format!("{CHANNEL_MARK}{channel}");
        if let Some(at) = text[header_end..].find(&anchor) {
            header_end += at + anchor.len();
        }
    }
    for anchor in ["to=", CONSTRAIN_MARK] {
        if let Some(at) = text[header_end..].find(anchor) {
            let start = header_end + at;
            let len = text[start..]
                .find(char::is_whitespace)
                .unwrap_or(text.len() - start);
            if !text[start..start + len].contains(word) {
                header_end = start + len;
            }
        }
    }
    match text[header_end..].find(word) {
        Some(at) => text[header_end + at..].to_string(),
        None => word.to_string(),
    }
}

/// Whether `words` all occur in `text`, in order.
fn keeps_in_order(text: &str, words: &[String]) -> bool {
    let mut rest = text;
    words.iter().all(|word| match rest.find(word.as_str()) {
        Some(at) => {
            rest = &rest[at + word.len()..];
            true
        }
        None => false,
    })
}

/// Content types gpt-oss writes without `<|constrain|>`.
fn is_content_type_word(word: &str) -> bool {
    matches!(
        word,
        "json" | "code" | "text" | "markdown" | "md" | "html" | "python" | "javascript"
    )
}

/// Cuts garbage off a channel name (`commentary?` → `commentary`).
fn normalize_channel(raw: &str, repairs: &mut Vec<Repair>) -> String {
    if STANDARD_CHANNELS.contains(&raw) {
        return raw.to_string();
    }
    match STANDARD_CHANNELS
        .iter()
        .find(|known| raw.starts_with(**known))
    {
        Some(known) => {
            repairs.push(Repair::GarbageChannel(raw.to_string()));
            (*known).to_string()
        }
        None => {
            repairs.push(Repair::UnknownChannel(raw.to_string()));
            raw.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_reads_recipient_before_or_after_channel() {
        let a = strict(
            "assistant<|channel|>commentary to=functions.f <|constrain|>json",
            None,
        )
        .unwrap();
        let b = strict(
            "assistant to=functions.f<|channel|>commentary<|constrain|>json",
            None,
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.recipient.as_deref(), Some("functions.f"));
        assert_eq!(a.content_type.as_deref(), Some("<|constrain|>json"));
    }

    #[test]
    fn strict_rejects_what_the_reference_rejects() {
        assert!(strict("assistant<|channel|>", None).is_err());
        assert!(strict("", None).is_err());
        assert!(strict("stranger", None).is_err());
        assert!(strict("assistant a b c", None).is_err());
        let tool = strict("functions.f to=assistant<|channel|>commentary", None).unwrap();
        assert_eq!(
            tool.author,
            Author {
                role: Role::Tool,
                name: Some("functions.f".into())
            }
        );
    }

    #[test]
    fn lenient_reads_content_type_without_recipient() {
        let (header, content, repairs) = lenient(
            "<|channel|>final <|constrain|>json",
            Some(Role::Assistant),
            true,
        );
        assert_eq!(header.channel.as_deref(), Some("final"));
        assert_eq!(header.recipient, None);
        assert_eq!(header.content_type.as_deref(), Some("<|constrain|>json"));
        assert!(content.is_empty() && repairs.is_empty());
    }

    #[test]
    fn lenient_keeps_a_second_channel_as_text() {
        let (header, content, repairs) = lenient(
            "<|channel|>analysis<|channel|>final",
            Some(Role::Assistant),
            true,
        );
        assert_eq!(header.channel.as_deref(), Some("analysis"));
        assert_eq!(content, "<|channel|>final");
        assert_eq!(
            repairs,
            vec![
                Repair::DoubledChannel,
                Repair::UnplacedText("<|channel|>final".into())
            ]
        );
        let (_, content, _) = lenient(
            "<|channel|>final<|channel|>final",
            Some(Role::Assistant),
            true,
        );
        assert_eq!(content, "");
    }

    #[test]
    fn lenient_keeps_text_when_no_message_token_came() {
        let (header, content, _) = lenient(
            "<|channel|>commentary Hello  world",
            Some(Role::Assistant),
            false,
        );
        assert_eq!(header.channel.as_deref(), Some("commentary"));
        assert_eq!(content, "Hello  world");
    }

    proptest::proptest! {
        #[test]
        fn header_parsers_never_panic(
            text in "(<\\|channel\\|>|<\\|constrain\\|>|to=|assistant|tool| |\\?|json|é|[a-z.]{1,4}|\n){0,12}",
            with_role: bool,
            content_follows: bool,
        ) {
            let role = with_role.then_some(Role::Assistant);
            let _ = strict(&text, role);
            let (header, content, _) = lenient(&text, role, content_follows);
            // Lenient parsing keeps the words it could not place.
            {
                let placed = [header.channel.as_deref(), header.recipient.as_deref(), header.content_type.as_deref(), header.author.name.as_deref()];
                for word in text.split_whitespace().filter(|w| !w.contains('<') && !w.starts_with("to=")) {
                    let kept = content.contains(word) || placed.iter().flatten().any(|p| p.contains(word)) || Role::from_name(word).is_some();
                    proptest::prop_assert!(kept, "{:?} lost {:?}", text, word);
                }
            }
        }
    }
}
