//! Rendering conversations into o200k_harmony tokens, token-exact with openai-harmony 0.0.8.
//!
//! Text from users, tools and the model is always encoded as ordinary text; special tokens come
//! only from here. Header fields are checked against an allow-list first (see [`check`]).

pub(crate) mod check;
mod sections;

use chorus_core::Problem;

use crate::encoding::{Encoding, encoding};
use crate::model::{Content, Conversation, Message, Role};
use crate::tokens::{self, Rank};
use crate::typescript::TypeScriptStyle;

/// What the rendered tokens are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RenderMode {
    /// A prompt: the conversation followed by `<|start|>` and the next role.
    #[default]
    Completion,
    /// Training data: a final assistant message ends with `<|return|>` instead of `<|end|>`.
    Training,
    /// The conversation alone.
    Plain,
}

/// How to render.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderOptions {
    /// Prompt, training data or plain.
    pub mode: RenderMode,
    /// The role whose header a completion prompt opens (the reference's `next_turn_role`).
    pub next_role: Role,
    /// Drop analysis messages before the first `final` message when the last assistant message
    /// is `final` (the reference Python API's `auto_drop_analysis`, on by default).
    pub drop_analysis: bool,
    /// The TypeScript printer for tool parameters.
    pub typescript: TypeScriptStyle,
    /// Refuse header fields that spell a special token (`<|end|>` in a recipient); the
    /// reference renders them as plain text.
    pub check_headers: bool,
    /// Refuse a channel that the system message does not list (the reference renders it).
    pub strict_channels: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            mode: RenderMode::Completion,
            next_role: Role::Assistant,
            drop_analysis: true,
            typescript: TypeScriptStyle::Reference,
            check_headers: true,
            strict_channels: false,
        }
    }
}

/// Renders `conversation` into tokens.
pub fn render(conversation: &Conversation, options: &RenderOptions) -> Result<Vec<Rank>, Problem> {
    let mut out = Vec::with_capacity(256);
    render_into(&conversation.messages, options, &mut out)?;
    Ok(out)
}

/// Renders `messages` as a conversation, appending the tokens to `out`.
pub(crate) fn render_into(
    messages: &[Message],
    options: &RenderOptions,
    out: &mut Vec<Rank>,
) -> Result<(), Problem> {
    if options.check_headers {
        check::check_conversation(messages, options.strict_channels)?;
    }
    let encoding = encoding();
    let function_tools = declares_function_tools(messages);
    let dropped_before = if options.drop_analysis {
        analysis_drop_limit(messages)
    } else {
        0
    };
    for (index, message) in messages.iter().enumerate() {
        if index < dropped_before && message.channel.as_deref() == Some("analysis") {
            continue;
        }
        write_message(
            encoding,
            index,
            message,
            function_tools,
            options.typescript,
            out,
        )?;
    }
    match options.mode {
        RenderMode::Completion => {
            out.push(tokens::START);
            encoding.encode_ordinary_into(options.next_role.as_str(), out);
        }
        RenderMode::Training => {
            let ends_final = messages.last().is_some_and(|m| {
                m.author.role == Role::Assistant && m.channel.as_deref() == Some("final")
            });
            if let Some(last) = out.last_mut().filter(|_| ends_final) {
                *last = tokens::RETURN;
            }
        }
        RenderMode::Plain => {}
    }
    Ok(())
}

/// Renders one message on its own (no conversation context: no `functions` channel line).
pub fn render_message(message: &Message, style: TypeScriptStyle) -> Result<Vec<Rank>, Problem> {
    let options = RenderOptions {
        typescript: style,
        ..RenderOptions::default()
    };
    render_message_with(message, false, &options)
}

/// Renders one message on its own as the reference's `render` does: `function_tools` says
/// whether the conversation declares function tools (the system message then routes them to
/// `commentary`); of `options`, only the header checks and the TypeScript style apply.
pub fn render_message_with(
    message: &Message,
    function_tools: bool,
    options: &RenderOptions,
) -> Result<Vec<Rank>, Problem> {
    let mut out = Vec::with_capacity(64);
    if options.check_headers {
        check::check_conversation(std::slice::from_ref(message), options.strict_channels)?;
    }
    write_message(
        encoding(),
        0,
        message,
        function_tools,
        options.typescript,
        &mut out,
    )?;
    Ok(out)
}

/// Whether some developer message declares a non-empty `functions` namespace.
fn declares_function_tools(messages: &[Message]) -> bool {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .any(|content| match content {
            Content::DeveloperContent(developer) => developer
                .tools
                .as_ref()
                .and_then(|tools| tools.get("functions"))
                .is_some_and(|functions| !functions.tools.is_empty()),
            _ => false,
        })
}

/// The reference's rule: when the last assistant message is on `final`, analysis messages
/// before the first `final` message (of any author) are dropped. Returns that first index
/// (0 when nothing is dropped).
fn analysis_drop_limit(messages: &[Message]) -> usize {
    let last_assistant_final = messages
        .iter()
        .rev()
        .find(|m| m.author.role == Role::Assistant)
        .is_some_and(|m| m.channel.as_deref() == Some("final"));
    if !last_assistant_final {
        return 0;
    }
    messages
        .iter()
        .position(|m| m.channel.as_deref() == Some("final"))
        .unwrap_or(0)
}

/// Writes one message: `<|start|>header<|message|>content<|end|>` (or `<|call|>`).
fn write_message(
    encoding: &Encoding,
    index: usize,
    message: &Message,
    function_tools: bool,
    style: TypeScriptStyle,
    out: &mut Vec<Rank>,
) -> Result<(), Problem> {
    let role = message.author.role;
    out.push(tokens::START);
    if role == Role::Tool {
        let Some(name) = &message.author.name else {
            return Err(Problem::expected(
                format!("/messages/{index}/name"),
                "the tool's name (e.g. \"functions.lookup_weather\")",
                "no name",
            )
            .with_hint("tool messages are written under the tool's name, not the role"));
        };
        encoding.encode_ordinary_into(name, out);
    } else {
        encoding.encode_ordinary_into(role.as_str(), out);
        if let Some(name) = &message.author.name {
            encoding.encode_ordinary_into(&format!(":{name}"), out);
        }
    }
    if let Some(recipient) = message.recipient.as_deref().filter(|r| *r != "all") {
        encoding.encode_ordinary_into(&format!(" to={recipient}"), out);
    }
    if let Some(channel) = &message.channel {
        out.push(tokens::CHANNEL);
        encoding.encode_ordinary_into(channel, out);
    }
    if let Some(content_type) = &message.content_type {
        match content_type.strip_prefix("<|constrain|>") {
            Some(rest) => {
                encoding.encode_ordinary_into(" ", out);
                out.push(tokens::CONSTRAIN);
                encoding.encode_ordinary_into(rest, out);
            }
            None => encoding.encode_ordinary_into(&format!(" {content_type}"), out),
        }
    }
    out.push(tokens::MESSAGE);
    for (part, content) in message.content.iter().enumerate() {
        match content {
            Content::Text(text) => encoding.encode_ordinary_into(&text.text, out),
            Content::SystemContent(system) if role == Role::System => {
                let text = sections::system_text(system, function_tools, style);
                encoding.encode_ordinary_into(&text, out);
            }
            Content::DeveloperContent(developer) if role == Role::Developer => {
                encoding.encode_ordinary_into(&sections::developer_text(developer, style), out);
            }
            Content::SystemContent(_) | Content::DeveloperContent(_) => {
                let kind = if matches!(content, Content::SystemContent(_)) {
                    "system"
                } else {
                    "developer"
                };
                return Err(Problem::expected(
                    format!("/messages/{index}/content/{part}"),
                    format!("{kind}_content only in a {kind} message"),
                    format!("{kind}_content in a {role} message"),
                ));
            }
        }
    }
    out.push(if role == Role::Assistant && message.recipient.is_some() {
        tokens::CALL
    } else {
        tokens::END
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DeveloperContent, ToolDescription};
    use serde_json::json;

    #[test]
    fn the_typescript_option_reaches_the_developer_message() {
        let developer = DeveloperContent::default().with_function_tools(vec![ToolDescription {
            name: "f".into(),
            description: "Does f.".into(),
            parameters: Some(json!({"type": "object", "properties": {"o": {"type": "object", "properties": {"x": {"const": 1}}}}})),
        }]);
        let conversation = Conversation {
            messages: vec![Message::new(Role::Developer, developer)],
        };
        let text = |typescript| {
            let options = RenderOptions {
                typescript,
                mode: RenderMode::Plain,
                ..Default::default()
            };
            encoding()
                .decode_utf8(&render(&conversation, &options).unwrap())
                .unwrap()
        };
        assert!(
            text(TypeScriptStyle::Reference)
                .contains("type f = (_: {\no?: {\n    x?: any,\n    },\n}) => any;")
        );
        assert!(
            text(TypeScriptStyle::Correct)
                .contains("type f = (_: {\n  o?: {\n    x?: 1,\n  },\n}) => any;")
        );
    }
}
