//! Routing rules and subscriptions of `chorus.toml`: the bus's routing, set by the operator.

use chorus_bus::{Binding, Filter, RoutingRule};
use serde::Deserialize;
use serde_json::Value;

use crate::ids::id_problem;

/// `[[routes]]`: a message whose value at `pointer` equals `equals` goes to `route_to` instead of
/// its recipients (the first matching rule wins; seed 003 routes by `issue_category`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// JSON pointer into the message, e.g. `/payload/data/issue_category`.
    pub pointer: String,
    /// The value that triggers the rule (a string, number or boolean).
    pub equals: Value,
    /// The inbox (usually a pool) that gets the message.
    pub route_to: String,
}

/// `[[subscriptions]]`: inbox `queue` gets a copy of every message of a handoff type, or of
/// every message addressed to `recipient` (which then is a topic, not an inbox).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subscription {
    /// The inbox that receives the copies.
    pub queue: String,
    /// Every handoff of this type (e.g. `"ESCALATION"`).
    #[serde(default)]
    pub handoff_type: Option<String>,
    /// Every message addressed to this name.
    #[serde(default)]
    pub recipient: Option<String>,
}

impl RouteEntry {
    /// The bus's rule.
    pub fn rule(&self) -> RoutingRule {
        RoutingRule::new(&self.pointer, self.equals.clone(), &self.route_to)
    }

    /// Why the entry at `at` cannot be used, if it cannot.
    pub fn problem(&self, at: &str) -> Option<String> {
        if !self.pointer.starts_with('/') {
            return Some(format!(
                "{at}.pointer: expected a JSON pointer starting with '/', found {:?}",
                self.pointer
            ));
        }
        if !(self.equals.is_string() || self.equals.is_number() || self.equals.is_boolean()) {
            return Some(format!(
                "{at}.equals: expected a string, number or boolean, found {}",
                self.equals
            ));
        }
        id_problem(&self.route_to).map(|why| format!("{at}.route_to: the inbox name {why}"))
    }

    /// True when the rule sends `document` elsewhere (as the bus decides it).
    pub fn matches(&self, document: &Value) -> bool {
        RoutingRule::matches_at(&self.pointer, &self.equals, document)
    }
}

impl Subscription {
    /// The bus's binding, or why the entry at `at` cannot be used.
    pub fn binding(&self, at: &str) -> Result<Binding, String> {
        if let Some(why) = id_problem(&self.queue) {
            return Err(format!("{at}.queue: the inbox name {why}"));
        }
        let filter = match (&self.handoff_type, &self.recipient) {
            (Some(t), None) => Filter::HandoffType(t.clone()),
            (None, Some(r)) => {
                if let Some(why) = id_problem(r) {
                    return Err(format!("{at}.recipient: the name {why}"));
                }
                Filter::Recipient(r.clone())
            }
            _ => {
                return Err(format!(
                    "{at}: expected exactly one of handoff_type and recipient"
                ));
            }
        };
        Ok(Binding::new(&self.queue, filter))
    }
}
