//! The chorus strategy as a decision over cached counts: what to strip of media and what to drop.
//!
//! Order: (1) media of turns older than the newest, oldest message first, each replaced by a
//! placeholder; (2) the oldest whole turns; (3) the oldest units of the newest turn, never its
//! final unit; (4) media of what remains. Pinned units (system, developer and data messages,
//! with any tool unit they are part of) are never touched. A caller's summary is counted from the
//! first drop on. When even the pinned units, the final unit without media, the summary and the
//! request's fixed tokens exceed the budget (or a history holds nothing that may be dropped),
//! planning fails and says so: a plan never claims to fit when it does not.

use super::history::History;
use crate::error::{ContextError, Result};

/// What the chorus strategy decided, in a compact form that [`History::apply`] expands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Tokens of the request before trimming.
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// The budget planned for.
    pub budget: usize,
    /// Turns `0..stripped_turns` have all their media replaced.
    pub(crate) stripped_turns: usize,
    /// Further messages whose media are replaced.
    pub(crate) stripped_messages: Vec<usize>,
    /// Turns `0..dropped_turns` are dropped.
    pub(crate) dropped_turns: usize,
    /// The first `dropped_newest_units` units of the newest turn are dropped.
    pub(crate) dropped_newest_units: usize,
    /// Whether the caller's summary is inserted.
    pub summary: bool,
}

impl History {
    /// Plans the chorus strategy for `budget`; `summary_tokens` is the cost of the caller's
    /// summary message, inserted when anything is dropped. Fails with
    /// [`ContextError::DoesNotFit`] when even the smallest plan exceeds the budget.
    pub fn plan(&self, budget: usize, summary_tokens: Option<usize>) -> Result<Plan> {
        let plan = self.plan_within(budget, summary_tokens);
        if plan.tokens_after <= budget {
            Ok(plan)
        } else {
            Err(self.does_not_fit(&plan, plan.tokens_after, budget, summary_tokens))
        }
    }

    /// The first plan in the strategy's order whose count fits `budget`, or the last one (every
    /// droppable thing dropped) when none does; its `tokens_after` then exceeds `budget`.
    pub(crate) fn plan_within(&self, budget: usize, summary_tokens: Option<usize>) -> Plan {
        let before = self.total();
        let mut plan = Plan {
            tokens_before: before,
            tokens_after: before,
            budget,
            stripped_turns: 0,
            stripped_messages: Vec::new(),
            dropped_turns: 0,
            dropped_newest_units: 0,
            summary: false,
        };
        let mut total = before;
        let fits = |total: usize| total <= budget;
        let newest = self.turns.iter().rposition(|t| !t.units.is_empty());
        let Some(newest) = newest.filter(|_| !fits(total)) else {
            // It fits, or nothing may be dropped.
            return self.finish(plan, total);
        };
        // (1) media of older turns.
        while plan.stripped_turns < newest {
            let turn = &self.turns[plan.stripped_turns];
            if !fits(total - turn.saving) {
                total -= turn.saving;
                plan.stripped_turns += 1;
                continue;
            }
            for &m in self.turn_messages(plan.stripped_turns) {
                let entry = &self.entries[m];
                if entry.stripped < entry.tokens {
                    total -= entry.tokens - entry.stripped;
                    plan.stripped_messages.push(m);
                    if fits(total) {
                        return self.finish(plan, total);
                    }
                }
            }
            break; // not reached: stripping the whole turn fits, as checked above
        }
        // (2) oldest whole turns.
        let summary = summary_tokens.unwrap_or(0);
        while plan.dropped_turns < newest {
            let turn = &self.turns[plan.dropped_turns];
            total -= turn.tokens - turn.saving;
            plan.dropped_turns += 1;
            if summary_tokens.is_some() && !plan.summary {
                plan.summary = true;
                total += summary;
            }
            if fits(total) {
                return self.finish(plan, total);
            }
        }
        // (3) oldest units of the newest turn, keeping its final unit.
        let units = &self.turns[newest].units;
        while plan.dropped_newest_units + 1 < units.len() {
            total -= self.units[units[plan.dropped_newest_units]].tokens;
            plan.dropped_newest_units += 1;
            if summary_tokens.is_some() && !plan.summary {
                plan.summary = true;
                total += summary;
            }
            if fits(total) {
                return self.finish(plan, total);
            }
        }
        // (4) media of the final unit.
        let last = &self.units[units[units.len() - 1]];
        for &m in &last.members {
            let entry = &self.entries[m];
            if entry.stripped < entry.tokens {
                total -= entry.tokens - entry.stripped;
                plan.stripped_messages.push(m);
            }
        }
        self.finish(plan, total)
    }

    /// Why `plan`, the smallest plan, does not fit: `needed` tokens (its count, or for gpt-oss
    /// its rendered count) against `budget`, with what could not be dropped.
    pub(crate) fn does_not_fit(
        &self,
        plan: &Plan,
        needed: usize,
        budget: usize,
        summary_tokens: Option<usize>,
    ) -> ContextError {
        let mut kept = vec![format!(
            "the pinned system/developer/data messages ({} tokens)",
            self.pinned_tokens
        )];
        let newest = self.turns.iter().rposition(|t| !t.units.is_empty());
        if let Some(newest) = newest {
            let units = &self.turns[newest].units;
            let last = &self.units[units[units.len() - 1]];
            kept.push(format!(
                "the newest message with its tool results ({} tokens without media)",
                last.tokens - last.saving
            ));
        }
        if plan.summary {
            kept.push(format!(
                "the summary ({} tokens)",
                summary_tokens.unwrap_or_default()
            ));
        }
        kept.push(format!(
            "the request's reply priming and tool definitions ({} tokens)",
            self.fixed
        ));
        ContextError::DoesNotFit {
            needed,
            budget,
            reason: format!(
                "{} must be kept; {}",
                kept.join(", "),
                if newest.is_some() {
                    "nothing else is left to drop"
                } else {
                    "the history has no other message that could be dropped"
                }
            ),
        }
    }

    fn finish(&self, mut plan: Plan, total: usize) -> Plan {
        plan.tokens_after = total;
        plan
    }

    /// Message indexes of a turn's units, in unit order.
    fn turn_messages(&self, turn: usize) -> impl Iterator<Item = &usize> {
        self.turns[turn]
            .units
            .iter()
            .flat_map(|&u| self.units[u].members.iter())
    }
}
