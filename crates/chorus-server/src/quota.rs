//! The caps on what an agent's token can make the store keep: inboxes it creates by publishing
//! to recipients nobody configured, and records in its journals.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use axum::http::StatusCode;

use crate::error::ApiError;
use crate::rate::RateLimiter;

/// Counts, per agent, the inboxes its publishes created since the server started; refuses a
/// publish that would create more than the cap. Recipients the config names (agents, pools,
/// routing targets) are never counted, nor is an inbox once used.
#[derive(Debug, Default)]
pub struct InboxQuota {
    max: usize,
    state: Mutex<Seen>,
}

/// The inboxes already used, and how many each agent created.
#[derive(Debug, Default)]
struct Seen {
    used: HashSet<String>,
    created: HashMap<String, usize>,
}

impl InboxQuota {
    /// A cap of `max` new inboxes per agent; 0 turns it off.
    pub fn new(max: usize) -> InboxQuota {
        InboxQuota {
            max,
            state: Mutex::default(),
        }
    }

    /// Takes the inboxes among `fresh` (recipients the config does not name) that `agent` would
    /// create; refuses (422, at `pointer`) when they would pass the cap. Returns the ones taken,
    /// to give back with [`InboxQuota::give_back`] if the publish then fails.
    pub fn take(
        &self,
        agent: &str,
        fresh: &[&str],
        pointer: &str,
    ) -> Result<Vec<String>, ApiError> {
        if self.max == 0 || fresh.is_empty() {
            return Ok(Vec::new());
        }
        let mut seen = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let new: Vec<String> = fresh
            .iter()
            .filter(|r| !seen.used.contains(**r))
            .map(|r| (*r).to_owned())
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if new.is_empty() {
            return Ok(new);
        }
        let created = seen.created.get(agent).copied().unwrap_or(0);
        if created + new.len() > self.max {
            let issue = chorus_core::Problem::expected(
                pointer,
                format!("at most {} new inboxes per agent", self.max),
                format!("{:?}, a new inbox past agent {agent:?}'s {created}", new[0]),
            )
            .with_hint(
                "send to configured agents or pools (add them to chorus.toml), or raise \
                 max_new_inboxes (0 turns the cap off)",
            );
            return Err(ApiError::invalid(vec![issue], None));
        }
        *seen.created.entry(agent.to_owned()).or_insert(0) += new.len();
        seen.used.extend(new.iter().cloned());
        Ok(new)
    }

    /// Gives back inboxes taken for a publish that stored nothing.
    pub fn give_back(&self, agent: &str, taken: &[String]) {
        if taken.is_empty() {
            return;
        }
        let mut seen = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for inbox in taken {
            seen.used.remove(inbox);
        }
        if let Some(n) = seen.created.get_mut(agent) {
            *n = n.saturating_sub(taken.len());
        }
    }
}

/// The caps on journals: records per journal, and bytes of records per agent per minute.
#[derive(Debug)]
pub struct JournalQuota {
    max_records: u64,
    bytes_per_minute: u32,
    bytes: RateLimiter,
}

impl JournalQuota {
    /// At most `max_records` records a journal and `bytes_per_minute` bytes of records an
    /// agent a minute (all at once if it likes); 0 turns either off.
    pub fn new(max_records: u64, bytes_per_minute: u32) -> JournalQuota {
        JournalQuota {
            max_records,
            bytes_per_minute,
            bytes: RateLimiter::new(f64::from(bytes_per_minute) / 60.0, bytes_per_minute),
        }
    }

    /// Refuses (422) a record for a journal that holds `held` records already.
    pub fn check_records(&self, agent: &str, task: &str, held: u64) -> Result<(), ApiError> {
        if self.max_records == 0 || held < self.max_records {
            return Ok(());
        }
        let issue = chorus_core::Problem::expected(
            "",
            format!("at most {} records in one journal", self.max_records),
            format!("a record past the {held} of agent {agent:?}'s journal for task {task:?}"),
        )
        .with_hint(
            "keep fewer records per task (a record per step, not per token), start a new task,              or raise max_journal_records (0 turns the cap off)",
        );
        let mut e = ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "journal_full",
            format!(
                "the journal of agent {agent:?} for task {task:?} holds {held} records, its cap; \
                 nothing was recorded"
            ),
        );
        e.body.issues = vec![issue.into()];
        Err(e)
    }

    /// Takes `len` bytes from `agent`'s minute, or refuses: 429 with the seconds to wait, or
    /// 413 for a record larger than a whole minute's bytes.
    pub fn take_bytes(&self, agent: &str, len: usize) -> Result<(), ApiError> {
        if self.bytes_per_minute == 0 {
            return Ok(());
        }
        let cap = self.bytes_per_minute;
        let Some(n) = u32::try_from(len).ok().filter(|n| *n <= cap) else {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "record_too_large",
                format!(
                    "a journal record of {len} bytes is more than an agent may write in a minute \
                     ({cap} bytes, max_journal_bytes_per_minute)"
                ),
            ));
        };
        self.bytes
            .take_at(agent, n, std::time::Instant::now())
            .map_err(|wait| {
                let mut e = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "journal_rate_limited",
                    format!(
                        "agent {agent:?} wrote more than {cap} bytes of journal records in a \
                         minute (max_journal_bytes_per_minute); retry in {wait} s"
                    ),
                );
                e.retry_after_secs = Some(wait);
                e
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_new_inboxes_per_agent_once_each() {
        let quota = InboxQuota::new(2);
        assert_eq!(quota.take("a", &["x", "x"], "/recipient").unwrap(), ["x"]);
        // An inbox once used is not new again, for anyone.
        assert!(quota.take("a", &["x"], "/recipient").unwrap().is_empty());
        assert!(quota.take("b", &["x"], "/recipient").unwrap().is_empty());
        assert_eq!(quota.take("a", &["y"], "/recipient").unwrap(), ["y"]);
        let refused = quota.take("a", &["z"], "/recipient").unwrap_err();
        assert_eq!(refused.status, 422);
        // Another agent has its own count; a failed publish gives its inboxes back.
        let taken = quota.take("b", &["z", "w"], "/recipient").unwrap();
        quota.give_back("b", &taken);
        assert_eq!(quota.take("b", &["z", "w"], "/recipient").unwrap().len(), 2);
        assert!(
            InboxQuota::new(0)
                .take("a", &["p", "q", "r"], "/r")
                .unwrap()
                .is_empty()
        );
    }
}
