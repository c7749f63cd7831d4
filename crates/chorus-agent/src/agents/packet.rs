//! Building seed-003 handoff packets and validating them with chorus-core before they leave.

use chorus_core::handoff::{
    HandoffContext, HandoffMetadata, HandoffPayload, Instructions, PreviousAction, Recipients,
    SUPPORTED_VERSION,
};
use chorus_core::{HandoffMessage, HandoffType, Kind, Priority, Problem, Validator};
use serde_json::{Map, Value};

/// What an agent wants to hand off; [`PacketDraft::build`] fills identity and time and validates.
#[derive(Debug, Clone)]
pub struct PacketDraft {
    /// The sending agent.
    pub sender: String,
    /// The receiving agent or pool.
    pub recipient: String,
    /// The handoff type.
    pub handoff_type: HandoffType,
    /// `payload.data`, shaped for the type.
    pub data: Map<String, Value>,
    /// The task.
    pub task_id: String,
    /// The flow's correlation id.
    pub correlation_id: Option<String>,
    /// How urgent.
    pub priority: Priority,
    /// `context.workflow_state`.
    pub workflow_state: String,
    /// `context.historical_data_summary`.
    pub summary: Option<String>,
    /// `context.previous_actions` taken this step, as (action type, details), stamped now.
    pub previous_actions: Vec<(String, String)>,
    /// Actions carried from the handoff this one follows, with their own times; they come first.
    pub earlier_actions: Vec<PreviousAction>,
    /// What the receiver should do.
    pub instructions: Instructions,
}

/// A packet that does not validate; the problems carry JSON pointers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid {handoff_type} handoff from {sender}: {}", problems.iter().map(|p| p.to_string()).collect::<Vec<_>>().join("; "))]
pub struct PacketError {
    /// The sender.
    pub sender: String,
    /// The type it tried to send.
    pub handoff_type: String,
    /// What is wrong, with pointers into the packet.
    pub problems: Vec<Problem>,
}

/// A fresh message id (UUID v4).
pub fn new_message_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Now, as ISO 8601 with milliseconds in UTC.
pub fn now_timestamp() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

impl PacketDraft {
    /// A draft with empty context and instructions.
    pub fn new(
        sender: impl Into<String>,
        recipient: impl Into<String>,
        handoff_type: HandoffType,
        data: Map<String, Value>,
        task_id: impl Into<String>,
    ) -> Self {
        let handoff_type_name = handoff_type.as_str().to_owned();
        PacketDraft {
            sender: sender.into(),
            recipient: recipient.into(),
            handoff_type,
            data,
            task_id: task_id.into(),
            correlation_id: None,
            priority: Priority::Medium,
            workflow_state: format!("{handoff_type_name}_SENT"),
            summary: None,
            previous_actions: Vec::new(),
            earlier_actions: Vec::new(),
            instructions: Instructions::default(),
        }
    }

    /// Carries the story of `earlier` (the handoff this one follows) on: its previous actions
    /// ([`PacketDraft::carry_actions`]) and its history summary before this step's.
    pub fn continuing(&mut self, earlier: &HandoffMessage) {
        self.carry_actions(earlier);
        let before = earlier
            .context
            .historical_data_summary
            .as_deref()
            .map(str::trim);
        self.summary = match (before.filter(|b| !b.is_empty()), self.summary.take()) {
            (Some(before), Some(now)) if before.ends_with(now.trim()) => Some(before.to_owned()),
            (Some(before), Some(now)) => Some(format!("{before} {}", now.trim())),
            (Some(before), None) => Some(before.to_owned()),
            (None, now) => now,
        };
    }

    /// Carries the previous actions of `earlier` on: they come before this step's, in time order,
    /// with their own times.
    pub fn carry_actions(&mut self, earlier: &HandoffMessage) {
        let mut actions = earlier.context.previous_actions.clone();
        // Stable: actions with the same time (or an unreadable one) keep their order.
        actions.sort_by_key(|a| chrono::DateTime::parse_from_rfc3339(&a.timestamp).ok());
        self.earlier_actions = actions;
    }

    /// The handoff message, validated with chorus-core's schemas and checks.
    pub fn build(self) -> Result<HandoffMessage, PacketError> {
        let now = now_timestamp();
        let message = HandoffMessage {
            metadata: HandoffMetadata {
                message_id: new_message_id(),
                timestamp: now.clone(),
                protocol_version: SUPPORTED_VERSION.to_string(),
                sender_id: self.sender.clone(),
                recipient_id: Recipients::One(self.recipient),
                correlation_id: self.correlation_id,
                task_id: self.task_id,
                priority: self.priority,
                expiration_time: None,
                extra: Map::new(),
            },
            context: HandoffContext {
                workflow_state: self.workflow_state,
                previous_actions: self
                    .earlier_actions
                    .into_iter()
                    .chain(
                        self.previous_actions
                            .into_iter()
                            .map(|(action_type, details)| PreviousAction {
                                action_type,
                                details,
                                timestamp: now.clone(),
                                extra: Map::new(),
                            }),
                    )
                    .collect(),
                historical_data_summary: self.summary,
                user_interaction_history: None,
                extra: Map::new(),
            },
            payload: HandoffPayload {
                handoff_type: self.handoff_type,
                data: self.data,
                extra: Map::new(),
            },
            instructions: self.instructions,
            extra: Map::new(),
        };
        validate(&message).map(|()| message)
    }
}

/// Validates a handoff as chorus-core does on the bus.
pub fn validate(message: &HandoffMessage) -> Result<(), PacketError> {
    let value = serde_json::to_value(message).unwrap_or(Value::Null);
    let report = Validator::standard().validate_value(&value, Some(Kind::Handoff));
    if report.is_valid() {
        return Ok(());
    }
    Err(PacketError {
        sender: message.metadata.sender_id.clone(),
        handoff_type: message.payload.handoff_type.to_string(),
        problems: report.errors().cloned().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 003's escalation with its previous actions listed newest first.
    fn earlier() -> HandoffMessage {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/seeds/003-escalation.json"
        );
        let mut value: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        value["context"]["previous_actions"]
            .as_array_mut()
            .unwrap()
            .reverse();
        serde_json::from_value(value).unwrap()
    }

    fn draft() -> PacketDraft {
        let data = serde_json::json!({"status": "IN_PROGRESS"});
        let Value::Object(data) = data else {
            unreachable!()
        };
        let mut d = PacketDraft::new("tech", "front", HandoffType::StatusUpdate, data, "task-1");
        d.previous_actions = vec![("LOG_REVIEW".into(), "Read the logs.".into())];
        d.summary = Some("Logs read.".into());
        d
    }

    fn kinds(m: &HandoffMessage) -> Vec<&str> {
        m.context
            .previous_actions
            .iter()
            .map(|a| a.action_type.as_str())
            .collect()
    }

    #[test]
    fn continuing_carries_earlier_actions_in_time_order_and_adds_to_the_summary() {
        let earlier = earlier();
        let mut d = draft();
        d.continuing(&earlier);
        let m = d.build().unwrap();
        assert_eq!(
            kinds(&m),
            ["INITIAL_GREETING", "DIAGNOSTIC_ATTEMPT", "LOG_REVIEW"]
        );
        assert_eq!(
            m.context.previous_actions[0].timestamp,
            "2023-10-27T10:20:05.000Z"
        );
        let summary = m.context.historical_data_summary.unwrap();
        assert!(summary.starts_with("User 'John Doe' reported"), "{summary}");
        assert!(summary.ends_with("ISP details. Logs read."), "{summary}");
    }

    #[test]
    fn carry_actions_leaves_the_summary_to_its_writer() {
        let mut d = draft();
        d.carry_actions(&earlier());
        let m = d.build().unwrap();
        assert_eq!(
            kinds(&m),
            ["INITIAL_GREETING", "DIAGNOSTIC_ATTEMPT", "LOG_REVIEW"]
        );
        assert_eq!(
            m.context.historical_data_summary.as_deref(),
            Some("Logs read.")
        );
    }
}
