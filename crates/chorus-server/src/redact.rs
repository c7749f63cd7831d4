//! Redaction before anything is stored: values at JSON pointers, and text matching patterns
//! (e-mail addresses, phone numbers, or the config's own regular expressions).

use axum::body::Bytes;
use chorus_bus::Envelope;
use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// What to redact, as written in the config's `[redact]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactConfig {
    /// JSON pointers whose values are replaced whole, e.g. `/payload/data/customer_info`.
    #[serde(default)]
    pub pointers: Vec<String>,
    /// `email`, `phone`, or a regular expression; matches inside any string are replaced.
    #[serde(default)]
    pub patterns: Vec<String>,
}

/// E-mail addresses.
const EMAIL: &str = r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}";
/// Phone numbers in international form: `+`, then 8 or more digits, spaces, dots, dashes or
/// brackets (dates and times, which have no `+`, are left alone).
const PHONE: &str = r"\+\d[\d\s().-]{6,}\d";

/// A compiled redaction rule set.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    pointers: Vec<String>,
    patterns: Vec<(String, Regex)>,
}

impl Redactor {
    /// Compiles the config's rules; an invalid regular expression is an error naming it.
    pub fn new(config: &RedactConfig) -> Result<Redactor, String> {
        let patterns = config
            .patterns
            .iter()
            .map(|p| {
                let (label, source) = match p.as_str() {
                    "email" => ("email", EMAIL),
                    "phone" => ("phone", PHONE),
                    other => ("pattern", other),
                };
                Regex::new(source)
                    .map(|r| (format!("[REDACTED:{label}]"), r))
                    .map_err(|e| format!("redact.patterns: {p:?} is not a regular expression: {e}"))
            })
            .collect::<Result<_, _>>()?;
        for p in &config.pointers {
            if !p.starts_with('/') {
                return Err(format!(
                    "redact.pointers: {p:?} is not a JSON pointer (it must start with `/`)"
                ));
            }
        }
        Ok(Redactor {
            pointers: config.pointers.clone(),
            patterns,
        })
    }

    /// Redacts `document` in place; returns true when anything changed.
    pub fn apply(&self, document: &mut Value) -> bool {
        let mut changed = false;
        for p in &self.pointers {
            if let Some(v) = document.pointer_mut(p) {
                *v = Value::String("[REDACTED]".into());
                changed = true;
            }
        }
        if !self.patterns.is_empty() {
            changed |= self.scrub(document);
        }
        changed
    }

    /// The routing key of `document` that [`Redactor::apply`] would change (`"id"`,
    /// `"recipients"`, `"sender"`, …), or `"routing"` when it would make the document routable
    /// or not; `None` when redaction leaves its envelope as it is.
    ///
    /// Redaction runs after the sender, id and policy checks: a rule that matched a routing key
    /// would store the message under an envelope nobody checked. The rules are tried on a copy
    /// without long strings (media, text), which no routing key is.
    pub fn changed_routing(&self, document: &Value) -> Option<&'static str> {
        if self.pointers.is_empty() && self.patterns.is_empty() {
            return None;
        }
        let before = skeleton(document);
        let mut after = before.clone();
        if !self.apply(&mut after) {
            return None;
        }
        let envelope = |d: &Value| Envelope::from_document(d, Bytes::new()).ok();
        match (envelope(&before), envelope(&after)) {
            (None, None) => None,
            (Some(a), Some(b)) => first_change(&a, &b),
            _ => Some("routing"),
        }
    }

    fn scrub(&self, value: &mut Value) -> bool {
        match value {
            Value::String(s) => {
                let mut changed = false;
                for (label, regex) in &self.patterns {
                    if regex.is_match(s) {
                        *s = regex.replace_all(s, label.as_str()).into_owned();
                        changed = true;
                    }
                }
                changed
            }
            Value::Array(items) => items.iter_mut().fold(false, |c, v| self.scrub(v) | c),
            Value::Object(map) => map.values_mut().fold(false, |c, v| self.scrub(v) | c),
            _ => false,
        }
    }
}

/// Strings longer than any routing key: left out of the copy [`Redactor::changed_routing`]
/// tries the rules on.
const LONGEST_KEY: usize = 1024;

/// `value` with every string longer than [`LONGEST_KEY`] emptied.
fn skeleton(value: &Value) -> Value {
    match value {
        Value::String(s) if s.len() > LONGEST_KEY => Value::String(String::new()),
        Value::Array(items) => Value::Array(items.iter().map(skeleton).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), skeleton(v))).collect())
        }
        other => other.clone(),
    }
}

/// The first routing key on which two envelopes differ.
fn first_change(a: &Envelope, b: &Envelope) -> Option<&'static str> {
    [
        ("id", a.id != b.id),
        ("recipients", a.recipients != b.recipients),
        ("sender", a.sender != b.sender),
        ("task_id", a.task_id != b.task_id),
        ("correlation_id", a.correlation_id != b.correlation_id),
        ("conversation_id", a.conversation_id != b.conversation_id),
        ("handoff_type", a.handoff_type != b.handoff_type),
        ("priority", a.priority != b.priority),
        ("expiration", a.expires_at_ms != b.expires_at_ms),
    ]
    .into_iter()
    .find_map(|(key, differs)| differs.then_some(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn redactor(pointers: &[&str], patterns: &[&str]) -> Redactor {
        Redactor::new(&RedactConfig {
            pointers: pointers.iter().map(|s| s.to_string()).collect(),
            patterns: patterns.iter().map(|s| s.to_string()).collect(),
        })
        .unwrap()
    }

    #[test]
    fn redacts_pointers_emails_and_phones() {
        let r = redactor(&["/payload/data/secret"], &["email", "phone"]);
        let mut doc = json!({"payload": {"data": {
            "secret": {"k": 1},
            "note": "write to jane.doe@example.com or call +1-555-123-4567",
            "list": ["id 42", "2023-10-27T10:30:00+00:00"]
        }}});
        assert!(r.apply(&mut doc));
        assert_eq!(
            doc,
            json!({"payload": {"data": {
                "secret": "[REDACTED]",
                "note": "write to [REDACTED:email] or call [REDACTED:phone]",
                "list": ["id 42", "2023-10-27T10:30:00+00:00"]
            }}})
        );
        let mut clean = json!({"a": "nothing here", "n": 5});
        assert!(!r.apply(&mut clean));
    }

    #[test]
    fn names_the_routing_key_a_rule_would_change() {
        let message = json!({"role": "user", "id": "m-1", "name": "alice", "recipient": "billing",
            "content": format!("mail bob@example.com {}", "x".repeat(5000))});
        let seed = format!(
            "{}/../../examples/seeds/003-escalation.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut handoff: Value = serde_json::from_slice(&std::fs::read(seed).unwrap()).unwrap();
        handoff["metadata"]["recipient_id"] = json!("bob@example.com");
        handoff["metadata"]["correlation_id"] = json!("c-1");
        assert_eq!(
            redactor(&[], &["bill"]).changed_routing(&message),
            Some("recipients")
        );
        assert_eq!(
            redactor(&["/name"], &[]).changed_routing(&message),
            Some("sender")
        );
        assert_eq!(redactor(&[], &["m-"]).changed_routing(&message), Some("id"));
        // Text and long strings are redacted as before; the envelope stays.
        assert_eq!(
            redactor(&["/content"], &["email", "x{100}"]).changed_routing(&message),
            None
        );
        assert_eq!(redactor(&[], &[]).changed_routing(&message), None);
        let email = redactor(&[], &["email"]);
        assert_eq!(email.changed_routing(&handoff), Some("recipients"));
        assert_eq!(
            redactor(&["/metadata"], &[]).changed_routing(&handoff),
            Some("routing")
        );
        assert_eq!(
            redactor(&[], &["c-1"]).changed_routing(&handoff),
            Some("correlation_id")
        );
    }

    #[test]
    fn refuses_bad_rules() {
        let bad = RedactConfig {
            pointers: vec![],
            patterns: vec!["(".into()],
        };
        assert!(
            Redactor::new(&bad)
                .unwrap_err()
                .contains("not a regular expression")
        );
        let bad = RedactConfig {
            pointers: vec!["payload".into()],
            patterns: vec![],
        };
        assert!(Redactor::new(&bad).unwrap_err().contains("JSON pointer"));
    }
}
