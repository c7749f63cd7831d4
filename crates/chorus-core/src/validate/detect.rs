//! Recognises the kind of a document from its shape.

use serde_json::Value;

use crate::problem::Problem;
use crate::schema::Kind;

/// The kind a document looks like, or a problem saying why it cannot be told.
///
/// A document carrying the marks of two kinds (a message's `role` beside a handoff's `metadata`
/// and `payload`, say) is refused: readers that look at different keys would otherwise take it
/// for different things, and the bus routes by the kind decided here.
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
    let marks = [
        (
            Kind::HarmonyHandoff,
            "`protocol` or `meta` and `context`",
            object
                .get("protocol")
                .and_then(Value::as_str)
                .is_some_and(|p| p.starts_with("harmony_handoff"))
                || (has("meta") && has("context")),
        ),
        (
            Kind::Handoff,
            "`metadata` and `payload`",
            has("metadata") && has("payload"),
        ),
        (Kind::Conversation, "`messages`", has("messages")),
        (Kind::Message, "`role`", has("role")),
        (
            Kind::Data,
            "`type` \"data\"",
            object.get("type").and_then(Value::as_str) == Some("data"),
        ),
    ];
    let mut found = marks.iter().filter(|(_, _, present)| *present);
    let Some(&(kind, keys, _)) = found.next() else {
        return Err(Problem::error("", "expected a message, conversation, handoff, harmony-handoff packet or data part, found an object of none of these shapes")
            .with_hint("name the kind with --kind"));
    };
    if let Some(&(other, other_keys, _)) = found.next() {
        return Err(Problem::error(
            "",
            format!(
                "expected a document of one kind, found the keys of a {kind} ({keys}) and of a {other} ({other_keys})"
            ),
        )
        .with_hint(format!(
            "send the {kind} and the {other} as separate documents, or remove the keys that do not belong"
        )));
    }
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
        assert!(detect_kind(&json!({"role": "user", "metadata": {}})).is_ok());
        assert!(detect_kind(&json!([1])).is_err());
    }

    #[test]
    fn refuses_documents_with_the_marks_of_two_kinds() {
        let mixed = [
            json!({"role": "user", "messages": [], "metadata": {"sender_id": "billing"}}),
            json!({"role": "user", "metadata": {}, "payload": {}}),
            json!({"messages": [], "metadata": {}, "payload": {}}),
            json!({"protocol": "harmony_handoff_v1", "role": "user"}),
            json!({"type": "data", "role": "user"}),
        ];
        for value in mixed {
            let problem = detect_kind(&value).unwrap_err();
            assert_eq!(problem.pointer, "", "{value}");
            assert!(
                problem.message.contains("of one kind"),
                "{value}: {}",
                problem.message
            );
        }
    }
}
