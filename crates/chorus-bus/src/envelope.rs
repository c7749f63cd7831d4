//! The envelope: a message's routing keys next to its original JSON bytes.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use chorus_core::Problem;

pub use chorus_core::Priority;

/// The bus's storage key for a [`Priority`]: a small integer, 0 (LOW) to 3 (CRITICAL).
pub(crate) trait Rank: Sized {
    /// The rank of the priority, used as a storage key and an index.
    fn rank(self) -> u8;
    /// The priority of a rank; `None` above 3.
    fn from_rank(rank: u8) -> Option<Self>;
}

impl Rank for Priority {
    fn rank(self) -> u8 {
        self as u8
    }

    fn from_rank(rank: u8) -> Option<Priority> {
        Priority::DESCENDING
            .get(3usize.checked_sub(rank as usize)?)
            .copied()
    }
}

/// A message as the bus sees it: routing keys plus the bytes the sender published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Unique message id; the key for de-duplication and `handle_once`.
    pub id: String,
    /// Addresses to deliver to: agent ids or pool names (one copy per address).
    pub recipients: Vec<String>,
    /// The handoff type (`payload.handoff_type`), when the message is a handoff.
    pub handoff_type: Option<String>,
    /// Processing priority.
    pub priority: Priority,
    /// Unix time in milliseconds after which the message must not be handled.
    pub expires_at_ms: Option<i64>,
    /// The business task the message belongs to.
    pub task_id: Option<String>,
    /// Groups messages of one business flow.
    pub correlation_id: Option<String>,
    /// The conversation whose event log records this message.
    pub conversation_id: Option<String>,
    /// The sending agent.
    pub sender: Option<String>,
    /// The original JSON bytes, exactly as published (shared, not copied, between the
    /// publisher, the store and every delivery of the message).
    #[serde(with = "body")]
    pub bytes: Bytes,
}

impl Envelope {
    /// A MEDIUM-priority envelope with no optional keys set.
    pub fn new(
        id: impl Into<String>,
        recipients: Vec<String>,
        bytes: impl Into<Bytes>,
    ) -> Envelope {
        Envelope {
            id: id.into(),
            recipients,
            handoff_type: None,
            priority: Priority::Medium,
            expires_at_ms: None,
            task_id: None,
            correlation_id: None,
            conversation_id: None,
            sender: None,
            bytes: bytes.into(),
        }
    }

    /// Reads the routing keys of a seed-003 handoff packet (`metadata.*`, `payload.handoff_type`).
    ///
    /// The conversation is `metadata.conversation_id` when present, else the correlation id,
    /// else the task id. Every problem found is reported with its JSON pointer.
    pub fn from_handoff_json(
        value: &Value,
        bytes: impl Into<Bytes>,
    ) -> Result<Envelope, Vec<Problem>> {
        let mut issues = Vec::new();
        let meta = value.get("metadata");
        if !meta.is_some_and(Value::is_object) {
            issues.push(Problem::expected(
                "/metadata",
                "an object with message_id, sender_id, recipient_id, task_id, priority",
                describe(meta),
            ));
            return Err(issues);
        }
        let text = |name: &str, required: bool, issues: &mut Vec<Problem>| -> Option<String> {
            let field = meta.and_then(|m| m.get(name));
            match field {
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                None if !required => None,
                other => {
                    issues.push(Problem::expected(
                        format!("/metadata/{name}"),
                        "a non-empty string",
                        describe(other),
                    ));
                    None
                }
            }
        };
        let id = text("message_id", true, &mut issues);
        let sender = text("sender_id", true, &mut issues);
        let task_id = text("task_id", true, &mut issues);
        let correlation_id = text("correlation_id", false, &mut issues);
        let conversation_id = text("conversation_id", false, &mut issues);
        let recipients = read_recipients(meta.and_then(|m| m.get("recipient_id")), &mut issues);
        let priority = read_priority(meta.and_then(|m| m.get("priority")), &mut issues);
        let expires_at_ms =
            read_expiration(meta.and_then(|m| m.get("expiration_time")), &mut issues);
        let handoff_type = match value.pointer("/payload/handoff_type") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            other => {
                issues.push(Problem::expected(
                    "/payload/handoff_type",
                    "a string such as \"ESCALATION\"",
                    describe(other),
                ));
                None
            }
        };
        if !issues.is_empty() {
            return Err(issues);
        }
        let conversation_id = conversation_id
            .or_else(|| correlation_id.clone())
            .or_else(|| task_id.clone());
        Ok(Envelope {
            id: id.unwrap_or_default(),
            recipients,
            handoff_type,
            priority,
            expires_at_ms,
            task_id,
            correlation_id,
            conversation_id,
            sender,
            bytes: bytes.into(),
        })
    }

    /// True when the message has an expiration time at or before `now_ms`.
    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at_ms.is_some_and(|t| t <= now_ms)
    }
}

/// The body in the stored envelope JSON: an array of byte values, as a `Vec<u8>` was written.
mod body {
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(bytes.iter())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        Vec::<u8>::deserialize(d).map(Bytes::from)
    }
}

fn read_recipients(field: Option<&Value>, issues: &mut Vec<Problem>) -> Vec<String> {
    let expected = "a recipient id or a non-empty array of recipient ids";
    match field {
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        Some(Value::Array(items)) if !items.is_empty() => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) if !s.is_empty() => out.push(s.clone()),
                    other => issues.push(Problem::expected(
                        format!("/metadata/recipient_id/{i}"),
                        "a non-empty string",
                        describe(Some(other)),
                    )),
                }
            }
            out
        }
        other => {
            issues.push(Problem::expected(
                "/metadata/recipient_id",
                expected,
                describe(other),
            ));
            Vec::new()
        }
    }
}

fn read_priority(field: Option<&Value>, issues: &mut Vec<Problem>) -> Priority {
    match field {
        Some(Value::String(s)) => parse_priority(s).unwrap_or_else(|| {
            let mut issue = Problem::expected(
                "/metadata/priority",
                "one of LOW, MEDIUM, HIGH, CRITICAL",
                format!("{s:?}"),
            );
            if parse_priority(&s.to_uppercase()).is_some() {
                issue = issue.with_hint("priorities are upper-case");
            }
            issues.push(issue);
            Priority::Medium
        }),
        other => {
            issues.push(Problem::expected(
                "/metadata/priority",
                "one of LOW, MEDIUM, HIGH, CRITICAL",
                describe(other),
            ));
            Priority::Medium
        }
    }
}

fn parse_priority(s: &str) -> Option<Priority> {
    Priority::DESCENDING.into_iter().find(|p| p.as_str() == s)
}

fn read_expiration(field: Option<&Value>, issues: &mut Vec<Problem>) -> Option<i64> {
    match field {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(t) => Some(t.timestamp_millis()),
            Err(_) => {
                issues.push(
                    Problem::expected(
                        "/metadata/expiration_time",
                        "an ISO 8601 date-time",
                        format!("{s:?}"),
                    )
                    .with_hint("include a time zone, e.g. 2023-10-27T12:00:00.000Z"),
                );
                None
            }
        },
        other => {
            issues.push(Problem::expected(
                "/metadata/expiration_time",
                "an ISO 8601 date-time string",
                describe(other),
            ));
            None
        }
    }
}

/// A short description of a JSON value for error messages.
pub(crate) fn describe(value: Option<&Value>) -> String {
    match value {
        None => "nothing (the field is missing)".into(),
        Some(Value::Null) => "null".into(),
        Some(Value::Bool(b)) => format!("the boolean {b}"),
        Some(Value::Number(n)) => format!("the number {n}"),
        Some(Value::String(s)) if s.is_empty() => "an empty string".into(),
        Some(Value::String(s)) => format!("the string {s:?}"),
        Some(Value::Array(a)) => format!("an array of {} items", a.len()),
        Some(Value::Object(_)) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn packet() -> Value {
        json!({
            "metadata": {
                "message_id": "m-1", "timestamp": "2023-10-27T10:30:00.123Z",
                "protocol_version": "1.0.0", "sender_id": "cs_agent",
                "recipient_id": ["a", "b"], "correlation_id": "flow-1", "task_id": "t-1",
                "priority": "HIGH", "expiration_time": "2023-10-27T12:00:00.000Z"
            },
            "payload": {"handoff_type": "ESCALATION", "data": {}}
        })
    }

    #[test]
    fn reads_routing_keys_of_a_handoff() {
        let env = Envelope::from_handoff_json(&packet(), b"raw".to_vec()).unwrap();
        assert_eq!(env.id, "m-1");
        assert_eq!(env.recipients, vec!["a", "b"]);
        assert_eq!(env.priority, Priority::High);
        assert_eq!(env.handoff_type.as_deref(), Some("ESCALATION"));
        assert_eq!(env.conversation_id.as_deref(), Some("flow-1"));
        assert_eq!(env.expires_at_ms, Some(1_698_408_000_000));
        assert_eq!(env.bytes, &b"raw"[..]);
    }

    #[test]
    fn reports_every_problem_with_its_pointer() {
        let mut p = packet();
        p["metadata"]["priority"] = json!("high");
        p["metadata"]["recipient_id"] = json!([1]);
        p["metadata"].as_object_mut().unwrap().remove("task_id");
        let issues = Envelope::from_handoff_json(&p, vec![]).unwrap_err();
        let pointers: Vec<_> = issues.iter().map(|i| i.pointer.as_str()).collect();
        assert_eq!(
            pointers,
            [
                "/metadata/task_id",
                "/metadata/recipient_id/0",
                "/metadata/priority"
            ]
        );
        assert_eq!(issues[2].hint.as_deref(), Some("priorities are upper-case"));
    }

    fn arb_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[A-Za-z0-9:_ .-]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("metadata".to_string()),
                        Just("message_id".to_string()),
                        Just("recipient_id".to_string()),
                        Just("priority".to_string()),
                        Just("expiration_time".to_string()),
                        Just("payload".to_string()),
                        Just("handoff_type".to_string()),
                        "[a-z_]{1,8}",
                    ],
                    inner,
                    0..5
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn any_document_is_read_or_refused_without_panicking(doc in arb_json()) {
            match Envelope::from_handoff_json(&doc, vec![]) {
                Ok(env) => proptest::prop_assert!(!env.id.is_empty() && !env.recipients.is_empty()),
                Err(issues) => proptest::prop_assert!(issues.iter().all(|i| i.pointer.starts_with('/'))),
            }
        }

        #[test]
        fn valid_packets_keep_their_keys(id in "[a-z0-9-]{1,20}", prio in 0u8..4, to in proptest::collection::vec("[a-z]{1,6}", 1..4)) {
            let priority = Priority::from_rank(prio).unwrap();
            let doc = json!({"metadata": {"message_id": id, "sender_id": "s", "task_id": "t",
                "recipient_id": to, "priority": priority.as_str()}});
            let env = Envelope::from_handoff_json(&doc, vec![]).unwrap();
            proptest::prop_assert_eq!(env.id, id);
            proptest::prop_assert_eq!(env.priority, priority);
            proptest::prop_assert_eq!(env.recipients, to);
        }
    }

    #[test]
    fn priority_ranks_round_trip() {
        for p in Priority::DESCENDING {
            assert_eq!(Priority::from_rank(p.rank()), Some(p));
            assert_eq!(parse_priority(p.as_str()), Some(p));
        }
        assert_eq!(Priority::Low.rank(), 0);
        assert_eq!(Priority::Critical.rank(), 3);
        assert_eq!(Priority::from_rank(4), None);
        assert!(Priority::Critical > Priority::Low);
    }
}
