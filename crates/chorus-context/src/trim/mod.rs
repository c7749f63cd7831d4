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
use crate::error::Result;

/// Trims `messages` (offered `tools`) to `max_tokens` with the chorus strategy; `summary`, when
/// given, is inserted after the leading pinned messages if anything is dropped.
///
/// For gpt-oss, whose per-message counts approximate the Harmony rendering, the kept request is
/// rendered and, while the rendered total exceeds the budget, the plan is repeated for a budget
/// below the previous plan's count, so every repetition drops or strips more: the loop ends after
/// at most one round per step of the strategy. The report then gives rendered totals.
///
/// Fails with [`DoesNotFit`](crate::ContextError::DoesNotFit) (the smallest request's count,
/// the budget and what could not be dropped) when dropping all that may be dropped does not
/// bring the request within the budget.
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
    let rendered = counter.profile().family == Family::O200kHarmony;
    let mut budget = max_tokens;
    // Each round's plan comes strictly later in the strategy's order than the one before; the
    // order has at most three steps per message (strip its media, drop its turn, drop its unit)
    // besides the first plan and the final stripping.
    for _ in 0..3 * messages.len() + 2 {
        let plan = history.plan_within(budget, summary_tokens);
        let (total, applied) = if rendered {
            let trimmed = history.apply(&plan, summary)?;
            (
                counter.count_request(&trimmed.messages, tools)?.total,
                Some(trimmed),
            )
        } else {
            (plan.tokens_after, None)
        };
        if total <= max_tokens {
            let mut trimmed = match applied {
                Some(trimmed) => trimmed,
                None => history.apply(&plan, summary)?,
            };
            if rendered {
                trimmed.report.budget = max_tokens;
                trimmed.report.tokens_before = counter.count_request(messages, tools)?.total;
                trimmed.report.tokens_after = total;
            }
            return Ok(trimmed);
        }
        if plan.tokens_after > budget || plan.tokens_after == 0 {
            // The smallest plan: nothing more can be dropped.
            return Err(history.does_not_fit(&plan, total, max_tokens, summary_tokens));
        }
        budget = budget
            .saturating_sub(total - max_tokens)
            .min(plan.tokens_after - 1);
    }
    let plan = history.plan_within(0, summary_tokens);
    let total = counter
        .count_request(&history.apply(&plan, summary)?.messages, tools)?
        .total;
    Err(history.does_not_fit(&plan, total, max_tokens, summary_tokens))
}
