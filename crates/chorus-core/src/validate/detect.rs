//! Recognises the kind of a document from its shape.

use serde_json::Value;

use super::problem::Problem;
use crate::schema::Kind;

/// The kind a document looks like, or a problem saying why it cannot be told.
pub fn detect_kind(value: &Value) -> Result<Kind, Problem> {
    let Value::Object(object) = value else {
        return Err(Problem::error(
            "",
            format!(
                "expected a JSON object, found {}",
                super::describe::json_type(value)
            ),
        )
        .with_hint(
            "validate the items of a list one by one, or wrap messages as {\"messages\": [...]}",
        ));
    };
    let has = |key: &str| object.contains_key(key);
    let kind = if object
        .get("protocol")
        .and_then(Value::as_str)
        .is_some_and(|p| p.starts_with("harmony_handoff"))
        || (has("meta") && has("context"))
    {
        Kind::HarmonyHandoff
    } else if has("metadata") && has("payload") {
        Kind::Handoff
    } else if has("messages") {
        Kind::Conversation
    } else if has("role") {
        Kind::Message
    } else if object.get("type").and_then(Value::as_str) == Some("data") {
        Kind::Data
    } else {
        return Err(Problem::error("", "expected a message, conversation, handoff, harmony-handoff packet or data part, found an object of none of these shapes")
            .with_hint("name the kind with --kind"));
    };
    Ok(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recognises_each_kind() {
        let cases = [
            (json!({"role": "user", "content": "hi"}), Kind::Message),
            (json!({"messages": []}), Kind::Conversation),
            (json!({"metadata": {}, "payload": {}}), Kind::Handoff),
            (
                json!({"protocol": "harmony_handoff_v1"}),
                Kind::HarmonyHandoff,
            ),
            (json!({"type": "data", "data": 1}), Kind::Data),
        ];
        for (value, kind) in cases {
            assert_eq!(detect_kind(&value).unwrap(), kind, "{value}");
        }
        assert!(detect_kind(&json!({"x": 1})).is_err());
        assert!(detect_kind(&json!([1])).is_err());
    }
}
