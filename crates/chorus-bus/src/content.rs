//! What "the same message" means when an id is published again: a digest of its JSON value.
//!
//! Two publishes of one id carry the same content when their documents are the same JSON value,
//! however they were serialised: object keys in any order, any whitespace, escapes decoded
//! (`"\u0041"` is `"A"`), and numbers compared by value (`1`, `1.0` and `1e0` are one number;
//! integers exactly, other numbers as 64-bit floats, as the parser reads them). Array order
//! matters. The trace context a hub stamps into a chorus message (`/metadata/traceparent` and
//! `/metadata/trace_id`) is left out: a retry may travel in a new trace and is still the same
//! message. Bytes that are not JSON are compared byte for byte.
//!
//! The digest is SHA-256 (the `sha2` crate, already in the workspace for the server's token
//! hashes and blob names): Redis and NATS store it with the dedupe record, read back by other
//! processes and after restarts, so it must be stable across builds and runs (a seeded hasher
//! such as foldhash is not) and collision-resistant (a 64-bit hash could take a different
//! message for a retry); 32 bytes per remembered id is cheap next to the message itself. SQLite
//! and memory keep the message itself as the record and compute digests only when an id comes
//! again.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Top-level `metadata` members that are not content (see the module documentation).
const NOT_CONTENT: [&str; 2] = ["traceparent", "trace_id"];

/// The SHA-256 of a message's canonical content.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ContentDigest([u8; 32]);

impl ContentDigest {
    /// The digest of a published document's bytes.
    pub fn of(bytes: &[u8]) -> ContentDigest {
        let mut h = Sha256::new();
        // A version tag: a later change of the rule must not match digests stored under this one.
        h.update(b"chorus-content-v1\0");
        match serde_json::from_slice::<Value>(bytes) {
            Ok(doc) => value(&mut h, &doc, true),
            Err(_) => {
                h.update(b"r");
                h.update(bytes);
            }
        }
        ContentDigest(h.finalize().into())
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A digest read back from storage; `None` unless exactly 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<ContentDigest> {
        bytes.try_into().ok().map(ContentDigest)
    }

    /// Lower-case hex, as stored by the server backends and shown in conflicts.
    pub fn hex(&self) -> String {
        self.to_string()
    }

    /// The inverse of [`ContentDigest::hex`].
    pub fn from_hex(text: &str) -> Option<ContentDigest> {
        if text.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(ContentDigest(out))
    }
}

impl fmt::Display for ContentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for ContentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ContentDigest({self})")
    }
}

/// Feeds a type-tagged, length-prefixed encoding of `v` to `h` (no two values share one).
fn value(h: &mut Sha256, v: &Value, top: bool) {
    match v {
        Value::Null => h.update(b"n"),
        Value::Bool(b) => h.update(if *b { b"t" } else { b"f" }),
        Value::Number(n) => number(h, n),
        Value::String(s) => text(h, s),
        Value::Array(items) => {
            h.update(b"a");
            h.update((items.len() as u64).to_be_bytes());
            for item in items {
                value(h, item, false);
            }
        }
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            h.update(b"o");
            h.update((members.len() as u64).to_be_bytes());
            for (key, member) in members {
                text(h, key);
                if top
                    && key == "metadata"
                    && let Value::Object(meta) = member
                {
                    metadata(h, meta);
                } else {
                    value(h, member, false);
                }
            }
        }
    }
}

/// The top-level `metadata` object, without the members that are not content.
fn metadata(h: &mut Sha256, meta: &serde_json::Map<String, Value>) {
    let mut members: Vec<(&String, &Value)> = meta
        .iter()
        .filter(|(k, _)| !NOT_CONTENT.contains(&k.as_str()))
        .collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    h.update(b"o");
    h.update((members.len() as u64).to_be_bytes());
    for (key, member) in members {
        text(h, key);
        value(h, member, false);
    }
}

fn text(h: &mut Sha256, s: &str) {
    h.update(b"s");
    h.update((s.len() as u64).to_be_bytes());
    h.update(s.as_bytes());
}

/// A JSON number as a value, whatever its spelling: an integral number as an integer, any
/// other as its float bits (`2`, `2.0` and `2e0` are one number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NumberValue {
    /// An integral number.
    Integer(i128),
    /// Any other, as the bits of its f64.
    Float(u64),
}

impl NumberValue {
    /// The value of `n`.
    pub(crate) fn of(n: &serde_json::Number) -> NumberValue {
        let integer = if let Some(i) = n.as_i64() {
            Some(i128::from(i))
        } else if let Some(u) = n.as_u64() {
            Some(i128::from(u))
        } else {
            // Below 2^64 in size, an integral f64 is an exact integer: 1.0 and 1 are one number.
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 18_446_744_073_709_551_616.0)
                .map(|f| f as i128)
        };
        match integer {
            Some(i) => NumberValue::Integer(i),
            None => NumberValue::Float(n.as_f64().unwrap_or(f64::NAN).to_bits()),
        }
    }
}

fn number(h: &mut Sha256, n: &serde_json::Number) {
    match NumberValue::of(n) {
        NumberValue::Integer(i) => {
            h.update(b"i");
            h.update(i.to_be_bytes());
        }
        NumberValue::Float(bits) => {
            h.update(b"d");
            h.update(bits.to_be_bytes());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        ContentDigest::of(a.as_bytes()) == ContentDigest::of(b.as_bytes())
    }

    #[test]
    fn one_value_however_serialised_is_one_content() {
        assert!(same(
            r#"{"a": 1, "b": [true, null, "x"], "c": {"d": 2.5}}"#,
            "{\"c\":{\"d\":25e-1},\"b\":[true,null,\"\\u0078\"],\"a\":1.0}"
        ));
        assert!(same(r#"{"n": -3}"#, r#"{"n": -3.0}"#));
        assert!(same(r#"{"n": 0}"#, r#"{"n": -0.0}"#));
        assert!(same(r#"{"n": 100}"#, r#"{"n": 1E2}"#));
    }

    #[test]
    fn another_value_is_another_content() {
        for (a, b) in [
            (r#"{"a": 1}"#, r#"{"a": 2}"#),
            (r#"{"a": 1}"#, r#"{"a": "1"}"#),
            (r#"{"a": 1.5}"#, r#"{"a": 1.25}"#),
            (r#"{"a": [1, 2]}"#, r#"{"a": [2, 1]}"#),
            (r#"{"a": null}"#, r#"{}"#),
            (r#"{"a": {}}"#, r#"{"a": []}"#),
            (r#"{"ab": "c"}"#, r#"{"a": "bc"}"#),
            (r#"["a", "b"]"#, r#"["ab"]"#),
            (r#"{"a": true}"#, r#"{"a": 1}"#),
        ] {
            assert!(!same(a, b), "{a} and {b}");
        }
    }

    #[test]
    fn the_trace_context_in_metadata_is_not_content() {
        assert!(same(
            r#"{"id": "m", "metadata": {"k": 1, "traceparent": "00-aa-bb-01", "trace_id": "aa"}}"#,
            r#"{"id": "m", "metadata": {"k": 1, "traceparent": "00-cc-dd-01"}}"#
        ));
        assert!(!same(
            r#"{"metadata": {"k": 1}}"#,
            r#"{"metadata": {"k": 2, "traceparent": "x"}}"#
        ));
        // Only the top-level metadata: deeper down it is content like any other member.
        assert!(!same(
            r#"{"payload": {"metadata": {"traceparent": "a"}}}"#,
            r#"{"payload": {"metadata": {"traceparent": "b"}}}"#
        ));
    }

    #[test]
    fn bytes_that_are_not_json_compare_byte_for_byte() {
        assert!(same("not json", "not json"));
        assert!(!same("not json", "not  json"));
        assert!(!same("{\"a\":", "{\"a\": "));
    }

    #[test]
    fn hex_round_trips() {
        let d = ContentDigest::of(b"{}");
        assert_eq!(d.hex().len(), 64);
        assert_eq!(ContentDigest::from_hex(&d.hex()), Some(d));
        assert_eq!(ContentDigest::from_slice(d.as_bytes()), Some(d));
        assert_eq!(ContentDigest::from_hex("zz"), None);
        assert_eq!(ContentDigest::from_slice(&[0; 31]), None);
    }
}
