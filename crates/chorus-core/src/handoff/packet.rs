//! The `harmony_handoff_v1` packet of seed 000 (A.3): everything the next agent needs, stateless.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The value of `protocol` in a packet.
pub const PACKET_PROTOCOL: &str = "harmony_handoff_v1";

/// A task handed from one agent to the next (A.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HandoffPacket {
    /// Always `harmony_handoff_v1`.
    #[schemars(extend("const" = "harmony_handoff_v1"))]
    pub protocol: String,
    /// Who hands to whom, and when.
    pub meta: PacketMeta,
    /// Objective, progress, constraints and artifacts.
    pub context: PacketContext,
    /// A compressed summary of the conversation so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_summary: Option<String>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Sender, receiver and time of a packet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PacketMeta {
    /// The agent handing off.
    pub source_agent: String,
    /// The agent taking over.
    pub target_agent: String,
    /// When, ISO 8601.
    #[schemars(extend("format" = "date-time"))]
    pub timestamp: String,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The task state carried by a packet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PacketContext {
    /// The task's goal; it does not change across handoffs.
    pub primary_objective: String,
    /// Progress, e.g. `in_progress`.
    pub status: String,
    /// Steps already done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_steps: Option<Vec<String>>,
    /// The step to take next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_immediate_step: Option<String>,
    /// Rules to keep (the packet's memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraints: Option<Vec<String>>,
    /// Shared assets by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<IndexMap<String, String>>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
