//! The cap on inboxes an agent creates by publishing to recipients nobody configured.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::error::ApiError;

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
