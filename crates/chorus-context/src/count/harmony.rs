//! gpt-oss counts: the tokens chorus-harmony renders (`o200k_harmony`), not a formula.
//!
//! A request is mapped with [`chorus_harmony::chorus_map::to_harmony`] (the default system
//! message, the chorus system and developer texts as developer instructions, the tools as the
//! `functions` namespace) and rendered as a completion prompt; its length is the count. What
//! Harmony cannot carry (images, audio, files, data parts) is not rendered, so it costs nothing.

use chorus_core::{ContentPart, Conversation, Message, ToolDefinition};
use chorus_harmony::chorus_map::to_harmony;
use chorus_harmony::{RenderOptions, SystemContent, render};

use super::breakdown::Breakdown;
use super::text::TextTokenizer;
use crate::error::{ContextError, Result};

/// Tokens of `messages` offered `tools`, as chorus-harmony renders them for completion.
pub(crate) fn rendered_tokens(messages: &[Message], tools: &[ToolDefinition]) -> Result<usize> {
    render_count(messages, tools, &RenderOptions::default())
}

fn render_count(
    messages: &[Message],
    tools: &[ToolDefinition],
    options: &RenderOptions,
) -> Result<usize> {
    let conversation = Conversation {
        messages: messages.to_vec(),
        tools: (!tools.is_empty()).then(|| tools.to_vec()),
        extra: Default::default(),
    };
    let mapped = to_harmony(&conversation, SystemContent::default());
    render(&mapped.conversation, options)
        .map(|tokens| tokens.len())
        .map_err(|problem| ContextError::Harmony { problem })
}

/// The Harmony messages of one chorus message, rendered on their own (reasoning kept): the
/// rendering of a request holding only `message` minus that of an empty request.
///
/// A tool result is rendered under its `name` (the called function is not known on its own)
/// and system and developer texts as developer instructions of their own; the request total of
/// [`rendered_tokens`] has neither approximation.
pub(crate) fn message_breakdown(message: &Message, text: &dyn TextTokenizer) -> Result<Breakdown> {
    let options = RenderOptions {
        drop_analysis: false,
        ..RenderOptions::default()
    };
    let total = render_count(std::slice::from_ref(message), &[], &options)?
        - render_count(&[], &[], &options)?;
    let reasoning: usize = message
        .parts()
        .iter()
        .map(|part| match part {
            ContentPart::Reasoning(r) => text.count(&r.text),
            _ => 0,
        })
        .sum();
    let calls: usize = message
        .calls()
        .iter()
        .map(|call| text.count(&call.function.arguments))
        .sum();
    let b = Breakdown {
        text: text.count(&message.text()) + reasoning,
        tools: calls,
        ..Breakdown::default()
    };
    Ok(Breakdown {
        overhead: total.saturating_sub(b.text + b.tools),
        ..b
    })
}

/// Tokens of a request outside its messages: the system message, the developer message that
/// declares `tools`, and the `<|start|>assistant` that primes the reply.
pub(crate) fn fixed_tokens(tools: &[ToolDefinition]) -> Result<usize> {
    rendered_tokens(&[], tools)
}
