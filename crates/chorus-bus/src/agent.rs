//! The minimal agent interface the hub and pipelines orchestrate.

use async_trait::async_trait;

/// An agent failed to reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent {agent} failed: {message}")]
pub struct AgentError {
    /// The agent's name.
    pub agent: String,
    /// What went wrong.
    pub message: String,
}

impl AgentError {
    /// An error of `agent`.
    pub fn new(agent: impl Into<String>, message: impl Into<String>) -> AgentError {
        AgentError {
            agent: agent.into(),
            message: message.into(),
        }
    }
}

/// Anything that answers a message with a message; `M` is the message type.
#[async_trait]
pub trait Agent<M: Send + 'static>: Send + Sync {
    /// The agent's name, unique within a hub.
    fn name(&self) -> &str;

    /// Replies to a message.
    async fn reply(&self, msg: M) -> Result<M, AgentError>;

    /// Receives a message broadcast by a hub (another participant's reply or an announcement).
    async fn observe(&self, _msg: M) {}
}
