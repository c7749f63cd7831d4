//! The standardized handoff message of seed 003: metadata, context, payload, instructions.
//!
//! The JSON Schema keeps the seed's `additionalProperties: false`; the types still keep unknown
//! keys in `extra` so a message of a newer minor protocol version survives a round trip.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{HandoffType, Priority};

/// A handoff from one agent to another (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct HandoffMessage {
    /// Identity, routing and timing of the message.
    pub metadata: HandoffMetadata,
    /// History and state of the task.
    pub context: HandoffContext,
    /// The handoff type and its typed data.
    pub payload: HandoffPayload,
    /// What the receiver should do.
    pub instructions: Instructions,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Identity, routing and timing of a handoff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct HandoffMetadata {
    /// Unique id (a UUID), for tracking and deduplication.
    #[schemars(extend("format" = "uuid"))]
    pub message_id: String,
    /// Creation time, ISO 8601 with milliseconds.
    #[schemars(extend("format" = "date-time"))]
    pub timestamp: String,
    /// Protocol version `MAJOR.MINOR.PATCH`.
    #[schemars(regex(pattern = r"^\d+\.\d+\.\d+$"))]
    pub protocol_version: String,
    /// The sending agent.
    pub sender_id: String,
    /// One agent or pool, or a list of them.
    pub recipient_id: Recipients,
    /// Links the messages of one business flow (any string; the seed's own example is not a UUID).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// The task this message belongs to.
    pub task_id: String,
    /// How urgently to handle it.
    pub priority: Priority,
    /// After this time the message must not be handled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub expiration_time: Option<String>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// One recipient or several.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Recipients {
    /// An agent id or pool name.
    One(String),
    /// Each gets a copy.
    Many(Vec<String>),
}

impl Recipients {
    /// The recipient ids as a slice-like list.
    pub fn ids(&self) -> Vec<&str> {
        match self {
            Recipients::One(id) => vec![id.as_str()],
            Recipients::Many(ids) => ids.iter().map(String::as_str).collect(),
        }
    }
}

/// History and state of the task at the time of the handoff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct HandoffContext {
    /// Where the task stands in its workflow, e.g. `CUSTOMER_ISSUE_ESCALATED`.
    pub workflow_state: String,
    /// What the sender did before handing off.
    pub previous_actions: Vec<PreviousAction>,
    /// A short summary instead of raw history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub historical_data_summary: Option<String>,
    /// Key interactions with the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_interaction_history: Option<Vec<UserInteraction>>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// An action the sender took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PreviousAction {
    /// Kind of action, e.g. `DIAGNOSTIC_ATTEMPT`.
    pub action_type: String,
    /// What was done.
    pub details: String,
    /// When.
    #[schemars(extend("format" = "date-time"))]
    pub timestamp: String,
    /// Further keys (allowed by the seed).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One interaction with the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserInteraction {
    /// Kind of interaction, e.g. `CHAT_MESSAGE`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Who spoke.
    pub sender: String,
    /// What was said.
    pub content: String,
    /// When.
    #[schemars(extend("format" = "date-time"))]
    pub timestamp: String,
    /// Further keys (allowed by the seed).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The handoff type and the data structured for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct HandoffPayload {
    /// How the receiver should read `data`.
    pub handoff_type: HandoffType,
    /// Data whose schema depends on `handoff_type`.
    pub data: Map<String, Value>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// What the receiver should do and how to handle failure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct Instructions {
    /// The sender's suggestion for the next step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_steps_suggestion: Option<String>,
    /// Actions the receiver must take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_actions: Option<Vec<String>>,
    /// Limits such as `time_limit` (an ISO 8601 duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Map<String, Value>>,
    /// How the receiver knows it is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_criteria: Option<String>,
    /// What to do when the receiver cannot finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_handling_strategy: Option<FailureHandlingStrategy>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

/// Retries, escalation target and fallback when the receiver fails.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = false))]
pub struct FailureHandlingStrategy {
    /// How often to retry (the seed's `minium` typo read as `minimum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<u32>,
    /// Agent or pool to escalate to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_to: Option<String>,
    /// Action to take instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_action: Option<String>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    #[schemars(skip)]
    pub extra: Map<String, Value>,
}

impl HandoffMessage {
    /// The handoff type.
    pub fn handoff_type(&self) -> &HandoffType {
        &self.payload.handoff_type
    }
}
