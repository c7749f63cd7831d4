//! Handoffs between agents: the standardized handoff message of seed 003 and the
//! `harmony_handoff_v1` packet of seed 000 (A.3), with a mapping between them.

mod data;
pub(crate) use mapping::escape_pointer;
mod mapping;
mod message;
mod packet;
mod version;

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use data::{
    ApprovalRequestData, CustomerInfo, EscalationData, NotificationData, ProvideInformationData,
    RequestInformationData, StatusUpdateData, TaskStatus, TaskTransferData, TechnicalDetails,
};
pub use mapping::{MappingError, MappingOptions, PacketMapping};
pub use message::{
    FailureHandlingStrategy, HandoffContext, HandoffMessage, HandoffMetadata, HandoffPayload,
    Instructions, PreviousAction, Recipients, UserInteraction,
};
pub use packet::{HandoffPacket, PACKET_PROTOCOL, PacketContext, PacketMeta};
pub use version::{ProtocolVersion, SUPPORTED_MAJOR, SUPPORTED_VERSION, VersionCheck};

/// How urgently a handoff must be handled; ordered from `Low` to `Critical`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum Priority {
    /// Whenever there is time.
    Low,
    /// The default.
    Medium,
    /// Before ordinary work.
    High,
    /// Before everything else.
    Critical,
}

impl Priority {
    /// All priorities from highest to lowest.
    pub const DESCENDING: [Priority; 4] = [
        Priority::Critical,
        Priority::High,
        Priority::Medium,
        Priority::Low,
    ];

    /// The priority as written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "LOW",
            Priority::Medium => "MEDIUM",
            Priority::High => "HIGH",
            Priority::Critical => "CRITICAL",
        }
    }
}

/// What kind of handoff this is; tells the receiver how to read `payload.data`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HandoffType {
    /// A whole task moves to the receiver.
    TaskTransfer,
    /// The sender asks for specific information.
    RequestInformation,
    /// The sender provides information, asked for or not.
    ProvideInformation,
    /// The sender cannot handle the task and escalates it.
    Escalation,
    /// An event happened; no action required.
    Notification,
    /// Progress or state of a task.
    StatusUpdate,
    /// The sender asks for approval.
    ApprovalRequest,
    /// A type registered by the user with its own data schema.
    Custom(String),
}

impl HandoffType {
    /// The seven types of seed 003.
    pub const STANDARD: [HandoffType; 7] = [
        HandoffType::TaskTransfer,
        HandoffType::RequestInformation,
        HandoffType::ProvideInformation,
        HandoffType::Escalation,
        HandoffType::Notification,
        HandoffType::StatusUpdate,
        HandoffType::ApprovalRequest,
    ];

    /// The type as written on the wire, e.g. `ESCALATION`.
    pub fn as_str(&self) -> &str {
        match self {
            HandoffType::TaskTransfer => "TASK_TRANSFER",
            HandoffType::RequestInformation => "REQUEST_INFORMATION",
            HandoffType::ProvideInformation => "PROVIDE_INFORMATION",
            HandoffType::Escalation => "ESCALATION",
            HandoffType::Notification => "NOTIFICATION",
            HandoffType::StatusUpdate => "STATUS_UPDATE",
            HandoffType::ApprovalRequest => "APPROVAL_REQUEST",
            HandoffType::Custom(name) => name,
        }
    }

    /// Reads a type name; names outside the seven become `Custom`.
    pub fn parse(name: &str) -> Self {
        Self::STANDARD
            .into_iter()
            .find(|t| t.as_str() == name)
            .unwrap_or_else(|| HandoffType::Custom(name.to_owned()))
    }
}

impl fmt::Display for HandoffType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for HandoffType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for HandoffType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Cow::<str>::deserialize(deserializer)?;
        Ok(HandoffType::parse(&name))
    }
}

impl JsonSchema for HandoffType {
    fn schema_name() -> Cow<'static, str> {
        "HandoffType".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = Self::STANDARD.iter().map(HandoffType::as_str).collect();
        json_schema!({
            "description": "The handoff type; user-registered types are added at run time.",
            "type": "string",
            "enum": names
        })
    }
}
