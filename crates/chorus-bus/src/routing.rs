//! Where a published message goes: recipients, routing rules on payload fields, bindings.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::NumberValue;
use crate::envelope::Envelope;

/// What a binding matches: the messages a queue receives a copy of, besides those addressed to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Filter {
    /// Every message addressed to this recipient (a hub name, for broadcast to its members).
    Recipient(String),
    /// Every message of this handoff type (e.g. `"ESCALATION"`).
    HandoffType(String),
}

impl Filter {
    /// True when the envelope matches.
    pub fn matches(&self, env: &Envelope) -> bool {
        match self {
            Filter::Recipient(r) => env.recipients.iter().any(|x| x == r),
            Filter::HandoffType(t) => env.handoff_type.as_deref() == Some(t.as_str()),
        }
    }

    /// The storage form: (kind, value).
    pub fn parts(&self) -> (&'static str, &str) {
        match self {
            Filter::Recipient(r) => ("recipient", r),
            Filter::HandoffType(t) => ("handoff_type", t),
        }
    }

    /// The inverse of [`Filter::parts`].
    pub fn from_parts(kind: &str, value: &str) -> Option<Filter> {
        match kind {
            "recipient" => Some(Filter::Recipient(value.to_owned())),
            "handoff_type" => Some(Filter::HandoffType(value.to_owned())),
            _ => None,
        }
    }
}

/// A durable subscription: queue `queue` receives one copy of every message matching `filter`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Binding {
    /// The receiving queue (an agent id or pool name).
    pub queue: String,
    /// Which messages it receives.
    pub filter: Filter,
}

impl Binding {
    /// A binding of `queue` to `filter`.
    pub fn new(queue: impl Into<String>, filter: Filter) -> Binding {
        Binding {
            queue: queue.into(),
            filter,
        }
    }
}

/// Where a message names its recipients: a chorus message's `recipient`, a handoff's
/// `metadata.recipient_id`.
const RECIPIENT_POINTERS: [&str; 2] = ["/recipient", "/metadata/recipient_id"];

/// Redirects a message by a field: when the value at `pointer` equals `equals` (or is an array
/// holding it, as a list of recipients), the message goes to `route_to` instead of its
/// recipients — instead of the one recipient named, for a rule on the recipient field (seed
/// 003: route by `issue_category`; also by `/metadata/priority`, `/metadata/recipient_id`,
/// `/payload/handoff_type`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutingRule {
    /// JSON pointer into the message, e.g. `/payload/data/issue_category`.
    pub pointer: String,
    /// The value that triggers the rule.
    pub equals: Value,
    /// The recipient (usually a pool) that gets the message.
    pub route_to: String,
}

impl RoutingRule {
    /// A rule sending messages whose `pointer` equals `equals` to `route_to`.
    pub fn new(pointer: impl Into<String>, equals: Value, route_to: impl Into<String>) -> Self {
        RoutingRule {
            pointer: pointer.into(),
            equals,
            route_to: route_to.into(),
        }
    }

    /// Sends the message of `recipients` to `route_to`: instead of the one recipient the rule
    /// names when it matches on the recipient field (the others keep their copies), else
    /// instead of all of them.
    pub fn redirect(&self, recipients: &mut Vec<String>) {
        let on_recipient = RECIPIENT_POINTERS.contains(&self.pointer.as_str());
        match self.equals.as_str() {
            Some(named) if on_recipient && recipients.iter().any(|r| r == named) => {
                let mut out: Vec<String> = Vec::with_capacity(recipients.len());
                for r in recipients.drain(..) {
                    let r = if r == named { self.route_to.clone() } else { r };
                    if !out.contains(&r) {
                        out.push(r);
                    }
                }
                *recipients = out;
            }
            _ => *recipients = vec![self.route_to.clone()],
        }
    }

    /// True when the rule takes `document`.
    pub fn matches(&self, document: &Value) -> bool {
        RoutingRule::matches_at(&self.pointer, &self.equals, document)
    }

    /// True when the value at `pointer` in `document` is `equals`, or an array holding it;
    /// numbers are compared by value (`2`, `2.0` and `2e0` are one number).
    pub fn matches_at(pointer: &str, equals: &Value, document: &Value) -> bool {
        let same = |found: &Value| match (found, equals) {
            (Value::Number(a), Value::Number(b)) => NumberValue::of(a) == NumberValue::of(b),
            _ => found == equals,
        };
        match document.pointer(pointer) {
            Some(Value::Array(items)) => items.iter().any(same),
            Some(found) => same(found),
            None => false,
        }
    }
}

/// Applies the first matching rule to the envelope's recipients, then returns the queues the
/// message is stored in: its recipients plus every bound queue whose filter matches, each once.
///
/// A recipient that some binding subscribes to by [`Filter::Recipient`] is a topic (a hub
/// name): it fans out to the bound queues and is not itself a queue.
pub fn resolve(
    env: &mut Envelope,
    document: Option<&Value>,
    rules: &[RoutingRule],
    bindings: &[Binding],
) -> Vec<String> {
    if let Some(doc) = document
        && let Some(rule) = rules.iter().find(|r| r.matches(doc))
    {
        rule.redirect(&mut env.recipients);
    }
    let is_topic = |r: &String| {
        bindings
            .iter()
            .any(|b| matches!(&b.filter, Filter::Recipient(t) if t == r))
    };
    let mut queues: Vec<String> = Vec::with_capacity(env.recipients.len());
    let direct = env.recipients.iter().filter(|r| !is_topic(r));
    let bound = bindings
        .iter()
        .filter(|b| b.filter.matches(env))
        .map(|b| &b.queue);
    for q in direct.chain(bound) {
        if !queues.contains(q) {
            queues.push(q.clone());
        }
    }
    queues
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(recipients: &[&str], kind: &str) -> Envelope {
        let mut e = Envelope::new(
            "m",
            recipients.iter().map(|s| s.to_string()).collect(),
            vec![],
        );
        e.handoff_type = Some(kind.into());
        e
    }

    #[test]
    fn recipients_then_bindings_each_once() {
        let bindings = [
            Binding::new("auditor", Filter::HandoffType("ESCALATION".into())),
            Binding::new("bob", Filter::Recipient("room".into())),
            Binding::new("a", Filter::Recipient("room".into())),
            Binding::new("x", Filter::HandoffType("NOTIFICATION".into())),
        ];
        let mut e = env(&["a", "room"], "ESCALATION");
        assert_eq!(
            resolve(&mut e, None, &[], &bindings),
            ["a", "auditor", "bob"]
        );
    }

    #[test]
    fn first_matching_rule_redirects() {
        let rules = [
            RoutingRule::new(
                "/payload/data/issue_category",
                json!("BILLING"),
                "billing_pool",
            ),
            RoutingRule::new(
                "/payload/data/issue_category",
                json!("NETWORK"),
                "network_pool",
            ),
        ];
        let doc = json!({"payload": {"data": {"issue_category": "NETWORK"}}});
        let mut e = env(&["support_pool"], "ESCALATION");
        assert_eq!(resolve(&mut e, Some(&doc), &rules, &[]), ["network_pool"]);
        assert_eq!(e.recipients, ["network_pool"]);
        let other = json!({"payload": {"data": {"issue_category": "OTHER"}}});
        let mut e = env(&["support_pool"], "ESCALATION");
        assert_eq!(resolve(&mut e, Some(&other), &rules, &[]), ["support_pool"]);
    }

    #[test]
    fn a_rule_on_the_recipient_field_redirects_that_recipient_alone() {
        let rule = RoutingRule::new("/metadata/recipient_id", json!("legacy"), "desk_pool");
        let mut to = vec!["bob".to_owned(), "legacy".to_owned()];
        rule.redirect(&mut to);
        assert_eq!(to, ["bob", "desk_pool"]);
        let mut to = vec!["desk_pool".to_owned(), "legacy".to_owned()];
        rule.redirect(&mut to);
        assert_eq!(to, ["desk_pool"], "each once");
        let other = RoutingRule::new("/metadata/priority", json!("CRITICAL"), "urgent");
        let mut to = vec!["bob".to_owned(), "legacy".to_owned()];
        other.redirect(&mut to);
        assert_eq!(
            to,
            ["urgent"],
            "a rule on another field takes the message from all"
        );
    }

    #[test]
    fn a_rule_matches_inside_an_array_and_numbers_by_value() {
        let to_b = RoutingRule::new("/metadata/recipient_id", json!("b"), "b_pool");
        assert!(to_b.matches(&json!({"metadata": {"recipient_id": ["a", "b"]}})));
        assert!(to_b.matches(&json!({"metadata": {"recipient_id": "b"}})));
        assert!(!to_b.matches(&json!({"metadata": {"recipient_id": ["a", "c"]}})));
        assert!(!to_b.matches(&json!({"metadata": {}})));
        let level: Value = serde_json::from_str("2").unwrap();
        let rule = RoutingRule::new("/payload/data/level", level, "tier2");
        for spelling in ["2", "2.0", "2e0", "20e-1", "[1, 2.0]"] {
            let doc: Value = serde_json::from_str(&format!(
                r#"{{"payload": {{"data": {{"level": {spelling}}}}}}}"#
            ))
            .unwrap();
            assert!(rule.matches(&doc), "{spelling}");
        }
        for other in ["3", "2.5", "\"2\"", "[]"] {
            let doc: Value = serde_json::from_str(&format!(
                r#"{{"payload": {{"data": {{"level": {other}}}}}}}"#
            ))
            .unwrap();
            assert!(!rule.matches(&doc), "{other}");
        }
    }

    #[test]
    fn filter_parts_round_trip() {
        for f in [
            Filter::Recipient("r".into()),
            Filter::HandoffType("T".into()),
        ] {
            let (k, v) = f.parts();
            assert_eq!(Filter::from_parts(k, v), Some(f.clone()));
        }
        assert_eq!(Filter::from_parts("nope", "x"), None);
    }
}
