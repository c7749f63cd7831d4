//! The mapping between the `harmony_handoff_v1` packet (A.3) and the seed-003 handoff message.
//!
//! Packet → message, field by field:
//!
//! | packet | handoff message |
//! |---|---|
//! | `meta.source_agent` | `metadata.sender_id` |
//! | `meta.target_agent` | `metadata.recipient_id` (one recipient) |
//! | `meta.timestamp` | `metadata.timestamp` |
//! | — | `metadata.message_id`: given, else a UUIDv5 of the packet's JSON (stable, so re-sending dedupes) |
//! | — | `metadata.task_id`: given, else the message id; `priority`: given, else `MEDIUM` |
//! | `context.primary_objective` | `payload.data.task_description` (type `TASK_TRANSFER`) |
//! | `context.status` | `payload.data.status`, and upper-cased as `context.workflow_state` |
//! | `context.completed_steps[i]` | `payload.data.completed_steps[i]`, and `context.previous_actions[i]` of type `COMPLETED_STEP` |
//! | `context.next_immediate_step` | `payload.data.next_immediate_step` and `instructions.next_steps_suggestion` |
//! | `context.constraints` / `artifacts` | `payload.data.constraints` / `artifacts` |
//! | `history_summary` | `context.historical_data_summary` |
//!
//! Message → packet reads the same fields back and needs a `TASK_TRANSFER` with one recipient.
//! Whatever either side cannot carry is listed as JSON pointers in [`PacketMapping::dropped`].

use serde_json::{Map, Value};
use thiserror::Error;
use uuid::Uuid;

use super::data::TaskTransferData;
use super::message::{
    HandoffContext, HandoffMessage, HandoffMetadata, HandoffPayload, Instructions, PreviousAction,
    Recipients,
};
use super::packet::{HandoffPacket, PACKET_PROTOCOL, PacketContext, PacketMeta};
use super::{HandoffType, Priority, SUPPORTED_VERSION};

/// `previous_actions` entries made from the packet's completed steps have this type.
const COMPLETED_STEP: &str = "COMPLETED_STEP";
/// Namespace of the UUIDv5 message ids derived from packets.
const PACKET_NAMESPACE: Uuid = Uuid::from_u128(0x6368_6f72_7573_4000_8000_6861_6e64_6f66);

/// Choices the packet does not make: identity, task and priority of the message.
#[derive(Debug, Clone, Default)]
pub struct MappingOptions {
    /// The message id; default: a UUIDv5 of the packet.
    pub message_id: Option<String>,
    /// The task id; default: the message id.
    pub task_id: Option<String>,
    /// The priority; default `MEDIUM`.
    pub priority: Option<Priority>,
    /// The correlation id; default none.
    pub correlation_id: Option<String>,
}

/// A converted handoff and the JSON pointers (in the source) of what the target could not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketMapping<T> {
    /// The converted form.
    pub value: T,
    /// Source pointers of the dropped values.
    pub dropped: Vec<String>,
}

/// Why a handoff message cannot become a packet.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum MappingError {
    /// The packet form only carries task transfers.
    #[error(
        "/payload/handoff_type: expected TASK_TRANSFER, found {0} (hint: a harmony_handoff_v1 packet only carries whole-task transfers)"
    )]
    NotATaskTransfer(String),
    /// The packet form has one target agent.
    #[error(
        "/metadata/recipient_id: expected one recipient, found {0} (hint: send one packet per recipient)"
    )]
    SeveralRecipients(usize),
    /// The task-transfer data does not match its schema.
    #[error("/payload/data: {0}")]
    BadData(String),
}

fn extra_pointers(prefix: &str, extra: &Map<String, Value>, dropped: &mut Vec<String>) {
    dropped.extend(
        extra
            .keys()
            .map(|key| format!("{prefix}/{}", escape_pointer(key))),
    );
}

/// Escapes one JSON-pointer token (`~` → `~0`, `/` → `~1`).
pub(crate) fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

impl HandoffPacket {
    /// Converts the packet into a seed-003 `TASK_TRANSFER` handoff message.
    pub fn to_handoff_message(&self, options: &MappingOptions) -> PacketMapping<HandoffMessage> {
        let mut dropped = Vec::new();
        extra_pointers("", &self.extra, &mut dropped);
        extra_pointers("/meta", &self.meta.extra, &mut dropped);
        extra_pointers("/context", &self.context.extra, &mut dropped);
        let message_id = options.message_id.clone().unwrap_or_else(|| {
            let bytes = serde_json::to_vec(self).unwrap_or_default();
            Uuid::new_v5(&PACKET_NAMESPACE, &bytes).to_string()
        });
        let ctx = &self.context;
        let data = TaskTransferData {
            task_description: ctx.primary_objective.clone(),
            status: Some(ctx.status.clone()),
            completed_steps: ctx.completed_steps.clone(),
            next_immediate_step: ctx.next_immediate_step.clone(),
            constraints: ctx.constraints.clone(),
            artifacts: ctx.artifacts.clone(),
            deliverables: None,
            deadline: None,
        };
        let previous_actions = ctx
            .completed_steps
            .iter()
            .flatten()
            .map(|step| PreviousAction {
                action_type: COMPLETED_STEP.into(),
                details: step.clone(),
                timestamp: self.meta.timestamp.clone(),
                extra: Map::new(),
            })
            .collect();
        let Value::Object(data) = serde_json::to_value(data).unwrap_or_default() else {
            unreachable!("a struct serializes to an object")
        };
        let message = HandoffMessage {
            metadata: HandoffMetadata {
                task_id: options
                    .task_id
                    .clone()
                    .unwrap_or_else(|| message_id.clone()),
                message_id,
                timestamp: self.meta.timestamp.clone(),
                protocol_version: SUPPORTED_VERSION.to_string(),
                sender_id: self.meta.source_agent.clone(),
                recipient_id: Recipients::One(self.meta.target_agent.clone()),
                correlation_id: options.correlation_id.clone(),
                priority: options.priority.unwrap_or(Priority::Medium),
                expiration_time: None,
                extra: Map::new(),
            },
            context: HandoffContext {
                workflow_state: ctx.status.to_uppercase(),
                previous_actions,
                historical_data_summary: self.history_summary.clone(),
                user_interaction_history: None,
                extra: Map::new(),
            },
            payload: HandoffPayload {
                handoff_type: HandoffType::TaskTransfer,
                data,
                extra: Map::new(),
            },
            instructions: Instructions {
                next_steps_suggestion: ctx.next_immediate_step.clone(),
                ..Instructions::default()
            },
            extra: Map::new(),
        };
        PacketMapping {
            value: message,
            dropped,
        }
    }
}

impl HandoffMessage {
    /// Converts a `TASK_TRANSFER` with one recipient into a `harmony_handoff_v1` packet.
    pub fn to_packet(&self) -> Result<PacketMapping<HandoffPacket>, MappingError> {
        if self.payload.handoff_type != HandoffType::TaskTransfer {
            return Err(MappingError::NotATaskTransfer(
                self.payload.handoff_type.to_string(),
            ));
        }
        let target = match &self.metadata.recipient_id {
            Recipients::One(id) => id.clone(),
            Recipients::Many(ids) if ids.len() == 1 => ids[0].clone(),
            Recipients::Many(ids) => return Err(MappingError::SeveralRecipients(ids.len())),
        };
        let data: TaskTransferData =
            serde_json::from_value(Value::Object(self.payload.data.clone()))
                .map_err(|e| MappingError::BadData(e.to_string()))?;
        let dropped = self.packet_losses(&data);
        let packet = HandoffPacket {
            protocol: PACKET_PROTOCOL.into(),
            meta: PacketMeta {
                source_agent: self.metadata.sender_id.clone(),
                target_agent: target,
                timestamp: self.metadata.timestamp.clone(),
                extra: Map::new(),
            },
            context: PacketContext {
                primary_objective: data.task_description,
                status: data
                    .status
                    .unwrap_or_else(|| self.context.workflow_state.to_lowercase()),
                completed_steps: data.completed_steps,
                next_immediate_step: data
                    .next_immediate_step
                    .or_else(|| self.instructions.next_steps_suggestion.clone()),
                constraints: data.constraints,
                artifacts: data.artifacts,
                extra: Map::new(),
            },
            history_summary: self.context.historical_data_summary.clone(),
            extra: Map::new(),
        };
        Ok(PacketMapping {
            value: packet,
            dropped,
        })
    }

    /// Pointers of the values a packet has no place for.
    fn packet_losses(&self, data: &TaskTransferData) -> Vec<String> {
        let meta = &self.metadata;
        let mut dropped = Vec::new();
        let mut note = |present: bool, pointer: &str| {
            if present {
                dropped.push(pointer.to_owned());
            }
        };
        note(meta.priority != Priority::Medium, "/metadata/priority");
        note(meta.correlation_id.is_some(), "/metadata/correlation_id");
        note(meta.expiration_time.is_some(), "/metadata/expiration_time");
        note(meta.task_id != meta.message_id, "/metadata/task_id");
        note(
            self.context.user_interaction_history.is_some(),
            "/context/user_interaction_history",
        );
        for (i, action) in self.context.previous_actions.iter().enumerate() {
            note(
                action.action_type != COMPLETED_STEP,
                &format!("/context/previous_actions/{i}"),
            );
        }
        let ins = &self.instructions;
        note(
            ins.required_actions.is_some(),
            "/instructions/required_actions",
        );
        note(ins.constraints.is_some(), "/instructions/constraints");
        note(
            ins.success_criteria.is_some(),
            "/instructions/success_criteria",
        );
        note(
            ins.failure_handling_strategy.is_some(),
            "/instructions/failure_handling_strategy",
        );
        note(
            data.next_immediate_step.is_some()
                && ins.next_steps_suggestion.is_some()
                && ins.next_steps_suggestion != data.next_immediate_step,
            "/instructions/next_steps_suggestion",
        );
        note(data.deliverables.is_some(), "/payload/data/deliverables");
        note(data.deadline.is_some(), "/payload/data/deadline");
        extra_pointers("", &self.extra, &mut dropped);
        extra_pointers("/metadata", &meta.extra, &mut dropped);
        extra_pointers("/context", &self.context.extra, &mut dropped);
        extra_pointers("/payload", &self.payload.extra, &mut dropped);
        extra_pointers("/instructions", &ins.extra, &mut dropped);
        dropped
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn packet() -> HandoffPacket {
        serde_json::from_value(json!({
            "protocol": "harmony_handoff_v1",
            "meta": {"source_agent": "planner_v2", "target_agent": "coder_v1", "timestamp": "2024-03-20T10:00:00Z", "x_region": "eu"},
            "context": {"primary_objective": "snake game", "status": "in_progress", "completed_steps": ["spec", "pygame"]}
        }))
        .unwrap()
    }

    #[test]
    fn message_ids_are_stable_per_packet_and_options_win() {
        let a = packet()
            .to_handoff_message(&MappingOptions::default())
            .value;
        let b = packet()
            .to_handoff_message(&MappingOptions::default())
            .value;
        assert_eq!(a.metadata.message_id, b.metadata.message_id);
        assert_eq!(a.metadata.task_id, a.metadata.message_id);
        assert!(Uuid::parse_str(&a.metadata.message_id).is_ok());
        let options = MappingOptions {
            message_id: Some("m".into()),
            task_id: Some("t".into()),
            priority: Some(Priority::High),
            correlation_id: Some("c".into()),
        };
        let c = packet().to_handoff_message(&options).value;
        assert_eq!(
            (c.metadata.message_id.as_str(), c.metadata.task_id.as_str()),
            ("m", "t")
        );
        assert_eq!(c.metadata.priority, Priority::High);
    }

    #[test]
    fn completed_steps_become_previous_actions_and_unknown_keys_are_reported() {
        let mapped = packet().to_handoff_message(&MappingOptions::default());
        assert_eq!(mapped.dropped, ["/meta/x_region"]);
        let actions = &mapped.value.context.previous_actions;
        assert_eq!(actions.len(), 2);
        assert_eq!(
            (actions[1].action_type.as_str(), actions[1].details.as_str()),
            (COMPLETED_STEP, "pygame")
        );
        assert_eq!(mapped.value.context.workflow_state, "IN_PROGRESS");
    }

    #[test]
    fn what_a_packet_cannot_carry_is_listed() {
        let mut message = packet()
            .to_handoff_message(&MappingOptions::default())
            .value;
        message.metadata.priority = Priority::Critical;
        message.metadata.expiration_time = Some("2024-03-21T00:00:00Z".into());
        message.instructions.required_actions = Some(vec!["TEST".into()]);
        let back = message.to_packet().unwrap();
        assert_eq!(
            back.dropped,
            [
                "/metadata/priority",
                "/metadata/expiration_time",
                "/instructions/required_actions"
            ]
        );
        assert_eq!(
            back.value.context.completed_steps,
            packet().context.completed_steps
        );
    }

    #[test]
    fn only_single_recipient_task_transfers_become_packets() {
        let mut message = packet()
            .to_handoff_message(&MappingOptions::default())
            .value;
        message.metadata.recipient_id = Recipients::Many(vec!["a".into(), "b".into()]);
        assert_eq!(
            message.to_packet().unwrap_err(),
            MappingError::SeveralRecipients(2)
        );
        message.payload.handoff_type = HandoffType::Escalation;
        assert!(
            matches!(message.to_packet().unwrap_err(), MappingError::NotATaskTransfer(t) if t == "ESCALATION")
        );
    }
}
