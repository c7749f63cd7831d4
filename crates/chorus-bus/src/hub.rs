//! A hub of participants: each reply is broadcast to the others (seed 001's MsgHub).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use futures::future::join_all;

use crate::agent::{Agent, AgentError};

/// A group of agents that hear each other's replies while auto-broadcast is on.
pub struct Hub<M: Send + 'static> {
    name: String,
    participants: RwLock<Vec<Arc<dyn Agent<M>>>>,
    auto_broadcast: AtomicBool,
}

impl<M: Clone + Send + Sync + 'static> Hub<M> {
    /// Opens a hub with auto-broadcast on; every participant observes `announcement` first.
    pub async fn enter(
        name: impl Into<String>,
        participants: Vec<Arc<dyn Agent<M>>>,
        announcement: Option<M>,
    ) -> Hub<M> {
        let hub = Hub {
            name: name.into(),
            participants: RwLock::new(participants),
            auto_broadcast: AtomicBool::new(true),
        };
        if let Some(msg) = announcement {
            hub.broadcast(msg, None).await;
        }
        hub
    }

    /// The hub's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Turns auto-broadcast of replies on or off.
    pub fn set_auto_broadcast(&self, on: bool) {
        self.auto_broadcast.store(on, Ordering::SeqCst);
    }

    /// True when replies are broadcast.
    pub fn auto_broadcast(&self) -> bool {
        self.auto_broadcast.load(Ordering::SeqCst)
    }

    /// Adds a participant (also while others are replying); false if the name is taken.
    pub fn add(&self, agent: Arc<dyn Agent<M>>) -> bool {
        let mut list = self.participants.write().unwrap_or_else(|p| p.into_inner());
        if list.iter().any(|a| a.name() == agent.name()) {
            return false;
        }
        list.push(agent);
        true
    }

    /// Removes a participant by name; false if it was not in the hub.
    pub fn remove(&self, name: &str) -> bool {
        let mut list = self.participants.write().unwrap_or_else(|p| p.into_inner());
        let before = list.len();
        list.retain(|a| a.name() != name);
        list.len() != before
    }

    /// The participants' names, in joining order.
    pub fn participants(&self) -> Vec<String> {
        self.snapshot()
            .iter()
            .map(|a| a.name().to_owned())
            .collect()
    }

    fn snapshot(&self) -> Vec<Arc<dyn Agent<M>>> {
        self.participants
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Delivers a copy of `msg` to every participant except `except`, concurrently.
    pub async fn broadcast(&self, msg: M, except: Option<&str>) {
        let targets: Vec<_> = self
            .snapshot()
            .into_iter()
            .filter(|a| Some(a.name()) != except)
            .collect();
        join_all(targets.iter().map(|a| a.observe(msg.clone()))).await;
    }

    /// Asks participant `name` to reply to `msg`; with auto-broadcast on, the others observe
    /// the reply.
    pub async fn speak(&self, name: &str, msg: M) -> Result<M, AgentError> {
        let agent = self
            .snapshot()
            .into_iter()
            .find(|a| a.name() == name)
            .ok_or_else(|| {
                AgentError::new(name, format!("not a participant of hub {}", self.name))
            })?;
        let reply = agent.reply(msg).await?;
        if self.auto_broadcast() {
            self.broadcast(reply.clone(), Some(name)).await;
        }
        Ok(reply)
    }
}
