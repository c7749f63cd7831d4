//! Any [`FlowAgent`] as a `chorus_bus::Agent<Message>`, for hubs and pipelines.

use std::sync::Arc;

use async_trait::async_trait;
use chorus_bus::{Agent, AgentError};
use chorus_core::Message;

use super::{FlowAgent, Item, handle_traced};

/// Adapts a flow agent to the bus's hub and pipeline interface: the reply is the last message
/// the agent sends (handoffs it makes are kept for the transcript). Messages a hub broadcasts
/// are kept until the agent's next turn, then given to [`FlowAgent::observe`] in order, except
/// the one it is asked to reply to (which it gets as its input).
pub struct BusAgent {
    inner: Arc<dyn FlowAgent>,
    task_id: String,
    sent: std::sync::Mutex<Vec<Item>>,
    heard: std::sync::Mutex<Vec<Message>>,
}

impl BusAgent {
    /// Wraps `inner`, handling every message as part of `task_id`.
    pub fn new(inner: Arc<dyn FlowAgent>, task_id: impl Into<String>) -> Self {
        BusAgent {
            inner,
            task_id: task_id.into(),
            sent: std::sync::Mutex::new(Vec::new()),
            heard: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Everything the agent sent so far, in order (taken out).
    pub fn take_sent(&self) -> Vec<Item> {
        std::mem::take(&mut *self.sent.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[async_trait]
impl Agent<Message> for BusAgent {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn reply(&self, msg: Message) -> Result<Message, AgentError> {
        let heard = std::mem::take(&mut *self.heard.lock().unwrap_or_else(|e| e.into_inner()));
        for m in heard {
            if m.id.is_none() || m.id != msg.id {
                self.inner.observe(&Item::Message(m), &self.task_id).await;
            }
        }
        let out = handle_traced(self.inner.as_ref(), &Item::Message(msg), &self.task_id).await?;
        let reply = out.iter().rev().find_map(|item| match item {
            Item::Message(m) => Some(m.clone()),
            Item::Handoff(_) => None,
        });
        self.sent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(out);
        reply.ok_or_else(|| AgentError::new(self.inner.name(), "sent no message in reply"))
    }

    async fn observe(&self, msg: Message) {
        self.heard
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(msg);
    }
}
