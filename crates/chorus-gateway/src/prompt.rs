//! The prompt: a chat request rendered into o200k_harmony token ids, the way gpt-oss was trained.
//!
//! - The Harmony system message carries the identity, the reasoning effort, the knowledge cutoff
//!   and the date; the client's `system` and `developer` messages become the developer
//!   instructions, its tools the `functions` namespace, and a `response_format` the
//!   "# Response Formats" section ([`chorus_harmony::chorus_map`] does the mapping).
//! - Past reasoning is kept between the tool calls of the current turn and dropped once a final
//!   answer followed it: every reasoning part of an assistant message up to the last final
//!   answer is left out, whether the client sent it back or not.
//! - A `tool_choice` naming a function is enforced by opening that call's header after
//!   `<|start|>assistant`, so the model writes its arguments.

use chorus_core::{Content, ContentPart, Conversation, Nullable};
use chorus_harmony::chorus_map::{add_response_format, to_harmony};
use chorus_harmony::{Rank, RenderOptions, SystemContent, encoding, render};

use crate::error::ApiError;
use crate::fields::{ChatRequest, is_final_answer};

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The token ids sent upstream, ending with the opened assistant header (and a forced
    /// call's header).
    pub tokens: Vec<Rank>,
    /// The tokens after `<|start|>assistant` that the prompt already holds (a forced call's
    /// header), for the parser to read first.
    pub opened: Vec<Rank>,
}

/// The system message of a request.
pub fn system(
    effort: Option<chorus_harmony::ReasoningEffort>,
    cutoff: &str,
    date: &str,
) -> SystemContent {
    let mut system = SystemContent::default();
    if let Some(effort) = effort {
        system.reasoning_effort = Some(effort);
    }
    system.knowledge_cutoff = Some(cutoff.to_owned());
    system.conversation_start_date = Some(if date.is_empty() {
        chrono::Utc::now().format("%Y-%m-%d").to_string()
    } else {
        date.to_owned()
    });
    system
}

/// Renders `request` with `system` as its system message.
pub fn render_request(request: &ChatRequest, system: SystemContent) -> Result<Prompt, ApiError> {
    let conversation = without_past_reasoning(&request.conversation);
    let mapped = to_harmony(&conversation, system);
    let mut harmony = mapped.conversation;
    if let Some(format) = &request.response_format {
        add_response_format(&mut harmony, format.clone());
    }
    let mut tokens =
        render(&harmony, &RenderOptions::default()).map_err(|p| ApiError::from_problem("", &p))?;
    let mut opened = Vec::new();
    if let Some(name) = &request.forced_tool {
        opened = encoding().encode_with_special_tokens(&format!(
            "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
        ));
        tokens.extend_from_slice(&opened);
    }
    Ok(Prompt { tokens, opened })
}

/// The conversation with the reasoning of every assistant message up to the last final answer
/// left out.
pub fn without_past_reasoning(conversation: &Conversation) -> Conversation {
    let mut out = conversation.clone();
    let Some(last_final) = out.messages.iter().rposition(is_final_answer) else {
        return out;
    };
    for message in &mut out.messages[..=last_final] {
        if let Nullable::Value(Content::Parts(parts)) = &mut message.content {
            parts.retain(|p| !matches!(p, ContentPart::Reasoning(_)));
        }
    }
    out
}
