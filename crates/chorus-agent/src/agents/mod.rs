//! Agents that take part in flows: [`RuleAgent`] for deterministic steps and [`LlmAgent`] for
//! model-driven ones, both speaking chorus messages and seed-003 handoffs ([`Item`]).
//!
//! [`A2aAgent`] stands in a flow for a remote A2A agent.
//!
//! [`FlowAgent`] is the richer interface the flow runner drives (one input, any number of
//! outputs, each addressed); [`BusAgent`] adapts any of them to `chorus_bus::Agent<Message>` for
//! hubs and pipelines.

mod a2a;
mod bus_agent;
mod item;
mod llm;
mod packet;
mod rule;
mod scope;
mod trace;
mod transfer;

pub use a2a::A2aAgent;
pub use bus_agent::BusAgent;
pub use item::Item;
pub(crate) use item::key_digest;
pub use llm::{LlmAgent, LlmAgentConfig};
pub use packet::{PacketDraft, PacketError, new_message_id, now_timestamp, validate};
pub use rule::{Action, Rule, RuleAgent};
pub use scope::{Scope, fill};
pub use trace::handle_traced;

use async_trait::async_trait;
use chorus_bus::AgentError;

use crate::cost::UsageTotals;

/// An agent in a flow: handles one message or handoff and returns what it sends, each item
/// addressed to its recipient.
#[async_trait]
pub trait FlowAgent: Send + Sync {
    /// The agent's name, unique within a flow; also its bus queue.
    fn name(&self) -> &str;

    /// Handles `input` for task `task_id`; returns the messages and handoffs to send.
    async fn handle(&self, input: &Item, task_id: &str) -> Result<Vec<Item>, AgentError>;

    /// Takes in `item` sent by another participant of a hub (seed 001 MsgHub broadcast) as
    /// context for task `task_id`, without answering it. Default: ignored.
    async fn observe(&self, _item: &Item, _task_id: &str) {}

    /// Token usage, cost and latency of the model calls so far (zero for agents without a model).
    fn usage(&self) -> UsageTotals {
        UsageTotals::default()
    }
}
