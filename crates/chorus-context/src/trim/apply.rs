//! Expanding a [`Plan`] into the kept messages and a report.

use std::collections::HashSet;

use chorus_core::{Message, Role};
use serde::Serialize;

use super::history::History;
use super::placeholder::{Replacement, strip_media};
use super::plan::Plan;
use crate::error::Result;

/// A message left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dropped {
    /// Its index in the input.
    pub index: usize,
    /// Its role.
    pub role: Role,
    /// Its id, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its tokens.
    pub tokens: usize,
}

/// What trimming did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrimReport {
    /// The strategy used.
    pub strategy: String,
    /// The budget.
    pub budget: usize,
    /// Tokens before.
    pub tokens_before: usize,
    /// Tokens after.
    pub tokens_after: usize,
    /// Messages left out.
    pub dropped: Vec<Dropped>,
    /// Media replaced by placeholders in kept messages.
    pub replaced: Vec<Replacement>,
    /// Whether the caller's summary was inserted.
    pub summary_inserted: bool,
}

/// The kept messages and the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Trimmed {
    /// The messages to send, in order.
    pub messages: Vec<Message>,
    /// What was done.
    pub report: TrimReport,
}

impl History {
    /// The messages `plan` keeps, with media replaced and `summary` inserted after the leading
    /// pinned messages when the plan says so.
    pub fn apply(&self, plan: &Plan, summary: Option<&Message>) -> Result<Trimmed> {
        let newest_dropped: HashSet<usize> = self
            .turns
            .iter()
            .rposition(|t| !t.units.is_empty())
            .map(|t| {
                self.turns[t].units[..plan.dropped_newest_units]
                    .iter()
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        let stripped: HashSet<usize> = plan.stripped_messages.iter().copied().collect();
        let mut report = TrimReport {
            strategy: "chorus".into(),
            budget: plan.budget,
            tokens_before: plan.tokens_before,
            tokens_after: plan.tokens_after,
            dropped: Vec::new(),
            replaced: Vec::new(),
            summary_inserted: false,
        };
        let mut kept = Vec::with_capacity(self.messages.len() + 1);
        let mut leading_pinned = true;
        for (i, message) in self.messages.iter().enumerate() {
            let entry = &self.entries[i];
            let unit = &self.units[entry.unit];
            if leading_pinned && !unit.pinned {
                leading_pinned = false;
                if plan.summary
                    && let Some(summary) = summary
                {
                    kept.push(summary.clone());
                    report.summary_inserted = true;
                }
            }
            let dropped = !unit.pinned
                && (unit.turn < plan.dropped_turns || newest_dropped.contains(&entry.unit));
            if dropped {
                report.dropped.push(Dropped {
                    index: i,
                    role: message.role,
                    id: message.id.clone(),
                    tokens: entry.tokens,
                });
                continue;
            }
            let strip = !unit.pinned && (unit.turn < plan.stripped_turns || stripped.contains(&i));
            if strip && entry.stripped < entry.tokens {
                let (bare, replaced) = strip_media(message, self.counter(), i)?;
                report.replaced.extend(replaced);
                kept.push(bare);
            } else {
                kept.push(message.clone());
            }
        }
        if plan.summary
            && !report.summary_inserted
            && let Some(summary) = summary
        {
            kept.push(summary.clone());
            report.summary_inserted = true;
        }
        Ok(Trimmed {
            messages: kept,
            report,
        })
    }
}
