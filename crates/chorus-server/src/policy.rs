//! The access policy of the config: which inboxes an agent reads, to whom and which handoff
//! types it sends.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::auth::Caller;
use crate::config::{AgentEntry, PoolEntry, ServerConfig};
use crate::error::ApiError;
use crate::routes::RouteEntry;

/// What each agent may do.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    agents: BTreeMap<String, AgentEntry>,
    pools: BTreeMap<String, PoolEntry>,
    max_in_flight: usize,
    accept_unknown: bool,
    routes: Vec<RouteEntry>,
    /// Inboxes and topics the routing config names (route targets, subscribed inboxes and
    /// subscribed recipients).
    routed: Vec<String>,
}

impl Policy {
    /// The policy of `config`'s agents.
    pub fn new(config: &ServerConfig) -> Policy {
        Policy {
            agents: config.agents.clone(),
            pools: config.pools.clone(),
            max_in_flight: config.max_in_flight,
            accept_unknown: config.accept_unknown_recipients,
            routes: config.routes.clone(),
            routed: config
                .routes
                .iter()
                .map(|r| r.route_to.clone())
                .chain(
                    config
                        .subscriptions
                        .iter()
                        .flat_map(|s| std::iter::once(s.queue.clone()).chain(s.recipient.clone())),
                )
                .collect(),
        }
    }

    /// The recipients the bus will store `document` for: `recipients` after the first routing
    /// rule that matches it (which takes the message from all of them, or from the one it
    /// names); none matching, `recipients` as they are.
    pub fn routed_recipients(&self, recipients: &[&str], document: &Value) -> Vec<String> {
        let mut routed: Vec<String> = recipients.iter().map(|r| (*r).to_owned()).collect();
        if let Some(route) = self.routes.iter().find(|r| r.matches(document)) {
            route.rule().redirect(&mut routed);
        }
        routed
    }

    /// The first of `recipients` nobody would read and no routing rule redirects (`routed` is
    /// [`Policy::routed_recipients`] of them): neither a configured agent or pool, nor an inbox
    /// an agent reads, nor an inbox or topic of the routing config (none when unknown
    /// recipients are accepted, or no agent is configured).
    pub fn unknown_recipient<'a>(
        &self,
        recipients: &[&'a str],
        routed: &[String],
    ) -> Option<&'a str> {
        if self.accept_unknown || self.agents.is_empty() {
            return None;
        }
        recipients
            .iter()
            .copied()
            .filter(|r| routed.iter().any(|x| x == r))
            .find(|r| !self.names(r))
    }

    /// Every configured agent and pool and every inbox an agent reads, sorted, each once.
    pub fn inboxes(&self) -> Vec<String> {
        let mut out: Vec<String> = self.agents.keys().cloned().collect();
        out.extend(self.pools.keys().cloned());
        out.extend(self.agents.values().flat_map(|a| a.read.iter().cloned()));
        out.sort();
        out.dedup();
        out
    }

    /// True when the config names `inbox`: a configured agent or pool, an inbox an agent reads,
    /// or an inbox or topic of the routing config.
    pub fn names(&self, inbox: &str) -> bool {
        self.agents.contains_key(inbox)
            || self.pools.contains_key(inbox)
            || self
                .agents
                .values()
                .any(|a| a.read.iter().any(|x| x == inbox))
            || self.routed.iter().any(|x| x == inbox)
    }

    /// Unsettled deliveries one stream of `inbox` holds at once: the agent's or the pool's
    /// setting, else the server's.
    pub fn max_in_flight(&self, inbox: &str) -> usize {
        self.agents
            .get(inbox)
            .and_then(|a| a.max_in_flight)
            .or_else(|| self.pools.get(inbox).and_then(|p| p.max_in_flight))
            .unwrap_or(self.max_in_flight)
            .max(1)
    }

    /// Refuses (403) unless the caller is the admin, the inbox's agent, or an agent allowed
    /// to read it.
    pub fn may_read(&self, caller: &Caller, inbox: &str) -> Result<(), ApiError> {
        let Caller::Agent(me) = caller else {
            return Ok(());
        };
        let listed = self
            .agents
            .get(me)
            .is_some_and(|a| a.read.iter().any(|r| r == inbox));
        if me == inbox || listed {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "agent {me:?} may not read the inbox {inbox:?}; an agent reads its own inbox and those listed in its `read`"
            )))
        }
    }

    /// Refuses (403) a message to a recipient, or of a handoff type, the sender may not use.
    /// `routed` are the recipients after the routing rules ([`Policy::routed_recipients`]):
    /// `send_to` is checked on where the message goes, so that a field a rule matches cannot
    /// carry it into an inbox the sender may not reach.
    pub fn may_send(
        &self,
        agent: &str,
        routed: &[impl AsRef<str>],
        handoff_type: Option<&str>,
    ) -> Result<(), ApiError> {
        let Some(entry) = self.agents.get(agent) else {
            return Ok(());
        };
        if let Some(allowed) = &entry.send_to
            && let Some(r) = routed
                .iter()
                .map(AsRef::as_ref)
                .find(|r| !allowed.iter().any(|a| a == r))
        {
            return Err(ApiError::forbidden(format!(
                "agent {agent:?} may not send to {r:?} (where the message goes after the \
                 routing rules); its `send_to` lists {allowed:?}"
            )));
        }
        if let (Some(allowed), Some(t)) = (&entry.handoff_types, handoff_type)
            && !allowed.iter().any(|a| a == t)
        {
            return Err(ApiError::forbidden(format!(
                "agent {agent:?} may not send {t} handoffs; its `handoff_types` lists {allowed:?}"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn policy() -> Policy {
        let config = ServerConfig::from_toml(&format!(
            "[agents.alice]\ntoken_sha256 = \"{h}\"\nsend_to = [\"bob\"]\nhandoff_types = [\"INFORMATION_REQUEST\"]\n\
             [agents.bob]\ntoken_sha256 = \"{b}\"\nread = [\"support_pool\"]\n",
            h = "0".repeat(64),
            b = "1".repeat(64)
        ))
        .unwrap();
        Policy::new(&config)
    }

    #[test]
    fn a_pool_of_the_config_is_known_and_has_its_own_max_in_flight() {
        let config = ServerConfig::from_toml(&format!(
            "[agents.w]\ntoken_sha256 = \"{h}\"\nread = [\"llm_pool\"]\n\
             [pools.llm_pool]\nmax_in_flight = 1\n[pools.quiet_pool]\n",
            h = "0".repeat(64)
        ))
        .unwrap();
        let p = Policy::new(&config);
        assert_eq!(p.max_in_flight("llm_pool"), 1);
        assert_eq!(p.max_in_flight("quiet_pool"), config.max_in_flight);
        assert!(
            p.names("quiet_pool"),
            "a pool nobody reads yet is a known recipient"
        );
        assert!(p.inboxes().contains(&"quiet_pool".to_owned()));
    }

    #[test]
    fn reads_own_and_listed_inboxes_only() {
        let p = policy();
        let bob = Caller::Agent("bob".into());
        assert!(p.may_read(&bob, "bob").is_ok());
        assert!(p.may_read(&bob, "support_pool").is_ok());
        assert_eq!(
            p.may_read(&bob, "alice").unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        let alice = Caller::Agent("alice".into());
        assert!(p.may_read(&alice, "support_pool").is_err());
        assert!(p.may_read(&Caller::Admin, "alice").is_ok());
    }

    #[test]
    fn sends_to_listed_recipients_and_types_only() {
        let p = policy();
        assert!(
            p.may_send("alice", &["bob"], Some("INFORMATION_REQUEST"))
                .is_ok()
        );
        assert!(p.may_send("alice", &["bob"], None).is_ok());
        let e = p
            .may_send("alice", &["bob"], Some("ESCALATION"))
            .unwrap_err();
        assert!(e.body.message.contains("ESCALATION"), "{}", e.body.message);
        assert!(p.may_send("alice", &["bob", "carol"], None).is_err());
        assert!(p.may_send("bob", &["anyone"], Some("ESCALATION")).is_ok());
    }
}
