//! chorus-core documents on the bus: envelopes from handoffs and messages, and their schema
//! validation on publish.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::Value;

use chorus_core::Message;
use chorus_core::Problem;
use chorus_core::handoff::HandoffMessage;
use chorus_core::schema::Kind;
use chorus_core::validate::detect_kind;

use crate::check::PublishCheck;
use crate::envelope::Envelope;

impl Envelope {
    /// The routing keys of a typed seed-003 handoff; `bytes` is its published JSON.
    ///
    /// The conversation is the correlation id, else the task id.
    pub fn from_handoff(
        msg: &HandoffMessage,
        bytes: impl Into<Bytes>,
    ) -> Result<Envelope, Vec<Problem>> {
        let meta = &msg.metadata;
        let expires_at_ms = match &meta.expiration_time {
            None => None,
            Some(t) => Some(
                chrono::DateTime::parse_from_rfc3339(t)
                    .map_err(|_| {
                        vec![Problem::expected(
                            "/metadata/expiration_time",
                            "an ISO 8601 date-time",
                            format!("{t:?}"),
                        )]
                    })?
                    .timestamp_millis(),
            ),
        };
        Ok(Envelope {
            id: meta.message_id.clone(),
            recipients: meta
                .recipient_id
                .ids()
                .into_iter()
                .map(str::to_owned)
                .collect(),
            handoff_type: Some(msg.handoff_type().as_str().to_owned()),
            priority: meta.priority,
            expires_at_ms,
            task_id: Some(meta.task_id.clone()),
            correlation_id: meta.correlation_id.clone(),
            conversation_id: meta
                .correlation_id
                .clone()
                .or_else(|| Some(meta.task_id.clone())),
            sender: Some(meta.sender_id.clone()),
            bytes: bytes.into(),
        })
    }

    /// The routing keys of a chorus message: its `id`, its `recipient`, its `name` as sender,
    /// its `metadata.session_id` as conversation and its `metadata.task_id` and
    /// `metadata.correlation_id` (string keys kept in `extra`) for tracking; MEDIUM priority.
    pub fn from_message(msg: &Message, bytes: impl Into<Bytes>) -> Result<Envelope, Vec<Problem>> {
        let mut issues = Vec::new();
        if msg.id.as_deref().is_none_or(str::is_empty) {
            issues.push(Problem::expected(
                "/id",
                "a message id (used for de-duplication)",
                "none",
            ));
        }
        if msg.recipient.as_deref().is_none_or(str::is_empty) {
            issues.push(
                Problem::expected("/recipient", "the agent id or pool to deliver to", "none")
                    .with_hint("set `recipient` on messages sent over the bus"),
            );
        }
        if !issues.is_empty() {
            return Err(issues);
        }
        let mut env = Envelope::new(
            msg.id.clone().unwrap_or_default(),
            msg.recipient.iter().cloned().collect(),
            bytes,
        );
        env.sender = msg.name.clone();
        if let Some(meta) = &msg.metadata {
            let key = |name: &str| {
                meta.extra
                    .get(name)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            env.conversation_id = meta.session_id.clone();
            env.task_id = key("task_id");
            env.correlation_id = key("correlation_id");
        }
        Ok(env)
    }

    /// Reads the routing keys of a published document: a chorus message or a seed-003 handoff,
    /// as chorus-core's [`detect_kind`] classifies it.
    ///
    /// This one classification decides what the bus routes by and what a server checks before
    /// it publishes (sender, ids, recipients): a conversation, a harmony-handoff packet, a data
    /// part or a document with the keys of two kinds is refused, never routed by guesswork.
    pub fn from_document(
        document: &Value,
        bytes: impl Into<Bytes>,
    ) -> Result<Envelope, Vec<Problem>> {
        match detect_kind(document) {
            Ok(Kind::Message) => {
                // Read from the borrowed value: a clone of the whole document (its content
                // included) cost as much as the reading itself.
                let msg = Message::deserialize(document).map_err(|e| {
                    vec![Problem::expected(
                        "",
                        "a chorus message",
                        format!("a document that does not read as one: {e}"),
                    )]
                })?;
                Envelope::from_message(&msg, bytes)
            }
            Ok(Kind::Handoff) => Envelope::from_handoff_json(document, bytes),
            Ok(other) => Err(vec![
                Problem::expected(
                    "",
                    "a chorus message (with `role`) or a seed-003 handoff (with `metadata` and `payload`)",
                    format!("a {other}"),
                )
                .with_hint(match other {
                    Kind::Conversation => {
                        "publish each message of the conversation on its own, with its `recipient`"
                    }
                    _ => "wrap it in a message or a handoff addressed to its recipient",
                }),
            ]),
            Err(problem) => Err(vec![problem]),
        }
    }
}

/// Validates published documents with chorus-core's schemas and checks (errors only; warnings
/// do not refuse a message).
#[derive(Debug, Clone, Copy, Default)]
pub struct CoreValidator {
    kind: Option<Kind>,
}

impl CoreValidator {
    /// Validates every document as what it looks like (message, handoff, …).
    pub fn any() -> CoreValidator {
        CoreValidator { kind: None }
    }

    /// Validates every document as `kind`.
    pub fn of(kind: Kind) -> CoreValidator {
        CoreValidator { kind: Some(kind) }
    }
}

impl PublishCheck for CoreValidator {
    fn validate(&self, document: &Value) -> Vec<Problem> {
        chorus_core::Validator::standard()
            .validate_value(document, self.kind)
            .errors()
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::Priority;
    use chorus_core::Role;

    fn seed_example(name: &str) -> Vec<u8> {
        let path = format!("{}/../../examples/seeds/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn typed_and_raw_handoffs_give_the_same_envelope() {
        let bytes = seed_example("003-escalation.json");
        let typed: HandoffMessage = serde_json::from_slice(&bytes).unwrap();
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        let a = Envelope::from_handoff(&typed, bytes.clone()).unwrap();
        let b = Envelope::from_document(&value, bytes).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.handoff_type.as_deref(), Some("ESCALATION"));
        assert_eq!(a.priority, Priority::High);
    }

    #[test]
    fn the_core_validator_refuses_the_seed_invalid_example() {
        let v = CoreValidator::any();
        let ok: Value =
            serde_json::from_slice(&seed_example("003-python-valid-escalation.json")).unwrap();
        assert_eq!(v.validate(&ok), vec![]);
        let bad: Value =
            serde_json::from_slice(&seed_example("invalid/003-python-invalid-escalation.json"))
                .unwrap();
        let issues = v.validate(&bad);
        assert!(!issues.is_empty());
        assert!(
            issues.iter().all(|i| i.pointer.starts_with('/')),
            "{issues:?}"
        );
    }

    #[test]
    fn messages_need_an_id_and_a_recipient() {
        let mut msg = Message::new(Role::User, "hi");
        let issues = Envelope::from_message(&msg, vec![]).unwrap_err();
        let pointers: Vec<_> = issues.iter().map(|i| i.pointer.as_str()).collect();
        assert_eq!(pointers, ["/id", "/recipient"]);
        msg.id = Some("m1".into());
        msg.recipient = Some("agent".into());
        msg.name = Some("alice".into());
        let env = Envelope::from_message(&msg, b"x".to_vec()).unwrap();
        assert_eq!(
            (env.id.as_str(), env.recipients.as_slice()),
            ("m1", &["agent".to_string()][..])
        );
        assert_eq!(env.sender.as_deref(), Some("alice"));
        assert_eq!((env.task_id, env.correlation_id), (None, None));
    }

    #[test]
    fn messages_are_tracked_by_the_task_and_correlation_in_their_metadata() {
        let doc = serde_json::json!({
            "id": "m1", "role": "assistant", "content": "done", "recipient": "bob",
            "metadata": {"session_id": "s-1", "task_id": "t-1", "correlation_id": "c-1"}
        });
        let env = Envelope::from_document(&doc, b"x".to_vec()).unwrap();
        assert_eq!(env.conversation_id.as_deref(), Some("s-1"));
        assert_eq!(env.task_id.as_deref(), Some("t-1"));
        assert_eq!(env.correlation_id.as_deref(), Some("c-1"));
    }
}
