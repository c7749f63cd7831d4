//! Trimming a conversation to a token budget: the chorus strategy (never separates a tool call
//! from its results, keeps pinned messages, replaces old media first) and a LangChain-compatible
//! mode equal to langchain-core 1.8's `trim_messages`.

mod apply;
mod history;
pub mod langchain;
mod placeholder;
mod plan;

use chorus_core::{Message, ToolDefinition};

pub use apply::{Dropped, TrimReport, Trimmed};
pub use history::History;
pub use placeholder::{Replacement, strip_media};
pub use plan::Plan;

use crate::count::TokenCounter;
use crate::error::Result;

/// Trims `messages` (offered `tools`) to `max_tokens` with the chorus strategy; `summary`, when
/// given, is inserted after the leading pinned messages if anything is dropped.
pub fn trim_chorus(
    messages: &[Message],
    tools: &[ToolDefinition],
    counter: &TokenCounter,
    max_tokens: usize,
    summary: Option<&Message>,
) -> Result<Trimmed> {
    let history = History::from_messages(counter.clone(), tools, messages)?;
    let summary_tokens = summary
        .map(|s| counter.count_message(s, messages.len()).map(|b| b.total()))
        .transpose()?;
    let plan = history.plan(max_tokens, summary_tokens)?;
    history.apply(&plan, summary)
}
