//! Redaction before anything is stored: values at JSON pointers, and text matching patterns
//! (e-mail addresses, phone numbers, or the config's own regular expressions).

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
