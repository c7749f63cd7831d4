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

use crate::count::{Family, TokenCounter};
use crate::error::{ContextError, Result};

/// Trims `messages` (offered `tools`) to `max_tokens` with the chorus strategy; `summary`, when
/// given, is inserted after the leading pinned messages if anything is dropped.
///
/// For gpt-oss, whose per-message counts approximate the Harmony rendering, the kept request is
/// rendered and the plan repeated with a budget lowered by the excess until the rendered total
/// fits; the report then gives rendered totals.
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
    let mut budget = max_tokens;
    loop {
        let plan = history
            .plan(budget, summary_tokens)
            .map_err(|e| with_budget(e, max_tokens))?;
        let mut trimmed = history.apply(&plan, summary)?;
        if counter.profile().family != Family::O200kHarmony {
            return Ok(trimmed);
        }
        let rendered = counter.count_request(&trimmed.messages, tools)?.total;
        if rendered <= max_tokens {
            trimmed.report.budget = max_tokens;
            trimmed.report.tokens_before = counter.count_request(messages, tools)?.total;
            trimmed.report.tokens_after = rendered;
            return Ok(trimmed);
        }
        budget = budget.saturating_sub(rendered - max_tokens);
    }
}

/// `error` with the caller's budget in place of a lowered one.
fn with_budget(error: ContextError, max_tokens: usize) -> ContextError {
    match error {
        ContextError::DoesNotFit { needed, reason, .. } => ContextError::DoesNotFit {
            needed,
            budget: max_tokens,
            reason,
        },
        other => other,
    }
}
