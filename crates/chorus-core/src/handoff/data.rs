//! The typed `payload.data` of each standard handoff type.
//!
//! ESCALATION and REQUEST_INFORMATION follow seed 003 exactly. The other five are chorus's design,
//! documented in `docs/handoff-types.md`; TASK_TRANSFER also carries every field of the
//! `harmony_handoff_v1` packet so the two forms map onto each other without loss.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Priority;

/// ESCALATION: the sender cannot handle the issue (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EscalationData {
    /// Routing category, e.g. `NETWORK_CONNECTIVITY`.
    pub issue_category: String,
    /// How severe the issue is.
    pub severity: Priority,
    /// Who is affected.
    pub customer_info: CustomerInfo,
    /// Technical facts gathered so far.
    pub technical_details: TechnicalDetails,
}

/// The customer behind an escalation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomerInfo {
    /// The customer's id (often an e-mail address).
    pub user_id: String,
    /// The customer's name.
    pub name: String,
    /// A phone number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact_number: Option<String>,
}

/// Technical details of an escalation; further keys are allowed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TechnicalDetails {
    /// Router model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_model: Option<String>,
    /// Internet service provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isp: Option<String>,
    /// What the customer sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symptoms: Option<String>,
    /// Whether logs are attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs_attached: Option<bool>,
    /// Ids of attached logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_references: Option<Vec<String>>,
    /// Further technical facts.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// REQUEST_INFORMATION: the sender needs specific information (seed 003).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestInformationData {
    /// Names of the pieces of information wanted.
    pub requested_info_keys: Vec<String>,
    /// Parameters that narrow the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_parameters: Option<Map<String, Value>>,
}

/// PROVIDE_INFORMATION: information asked for or shared proactively.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvideInformationData {
    /// The information, keyed like `requested_info_keys`.
    pub provided_info: Map<String, Value>,
    /// `message_id` of the REQUEST_INFORMATION this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_response_to: Option<String>,
    /// Requested keys that could not be provided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_keys: Option<Vec<String>>,
}

/// TASK_TRANSFER: the whole task moves to the receiver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskTransferData {
    /// The task's objective (A.3 `primary_objective`).
    pub task_description: String,
    /// Progress, e.g. `in_progress` (A.3 `status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Steps already done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_steps: Option<Vec<String>>,
    /// The step to take next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_immediate_step: Option<String>,
    /// Rules the receiver must keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Vec<String>>,
    /// Shared assets by name (URLs or paths), so nothing is uploaded twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<IndexMap<String, String>>,
    /// What the receiver must deliver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliverables: Option<Vec<String>>,
    /// When the task must be done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub deadline: Option<String>,
}

/// NOTIFICATION: an event happened; nothing is asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationData {
    /// Kind of event, e.g. `DEPLOYMENT_FINISHED`.
    pub event_type: String,
    /// What happened, in words.
    pub message: String,
    /// Structured facts about the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
}

/// Where a task stands, as reported by STATUS_UPDATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaskStatus {
    /// The handoff arrived and was accepted.
    Received,
    /// Work is under way.
    InProgress,
    /// Work waits on something (see `blocked_on`).
    Blocked,
    /// Done.
    Completed,
    /// Given up.
    Failed,
}

/// STATUS_UPDATE: progress of a task, sent back to the sender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusUpdateData {
    /// Where the task stands.
    pub status: TaskStatus,
    /// Percentage done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100))]
    pub progress_percent: Option<u8>,
    /// What happened since the last update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// What the task waits for, when blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_on: Option<String>,
    /// `message_id` of the handoff this update is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_response_to: Option<String>,
}

/// APPROVAL_REQUEST: the sender needs a yes or no before acting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequestData {
    /// The action to approve, e.g. `REFUND_CUSTOMER`.
    pub action: String,
    /// Why the action is needed.
    pub reason: String,
    /// Risk of the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk_level: Option<Priority>,
    /// Parameters of the action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Map<String, Value>>,
    /// Who may approve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Vec<String>>,
}
