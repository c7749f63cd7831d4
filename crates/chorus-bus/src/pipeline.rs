//! Pipelines: sequential, fan-out, conditional routing and loops over agents.

use std::sync::Arc;

use futures::future::try_join_all;

use crate::agent::{Agent, AgentError};

/// A shared agent handle.
pub type AgentRef<M> = Arc<dyn Agent<M>>;

/// Runs agents in order, each reply feeding the next; returns the last reply.
pub async fn sequential<M: Send + 'static>(
    agents: &[AgentRef<M>],
    msg: M,
) -> Result<M, AgentError> {
    let mut msg = msg;
    for agent in agents {
        msg = agent.reply(msg).await?;
    }
    Ok(msg)
}

/// Gives each agent its own copy of `msg` (a deep copy for owned message types), concurrently
/// or one after another; replies come back in the agents' order.
pub async fn fan_out<M: Clone + Send + 'static>(
    agents: &[AgentRef<M>],
    msg: &M,
    concurrent: bool,
) -> Result<Vec<M>, AgentError> {
    if concurrent {
        return try_join_all(agents.iter().map(|a| a.reply(msg.clone()))).await;
    }
    let mut replies = Vec::with_capacity(agents.len());
    for agent in agents {
        replies.push(agent.reply(msg.clone()).await?);
    }
    Ok(replies)
}

/// A predicate on messages.
pub type Predicate<M> = Box<dyn Fn(&M) -> bool + Send + Sync>;

/// Sends each message to the agent of the first branch whose predicate holds.
pub struct Router<M: Send + 'static> {
    branches: Vec<(Predicate<M>, AgentRef<M>)>,
    otherwise: Option<AgentRef<M>>,
}

impl<M: Send + 'static> Default for Router<M> {
    fn default() -> Self {
        Router {
            branches: Vec::new(),
            otherwise: None,
        }
    }
}

impl<M: Send + 'static> Router<M> {
    /// Adds a branch, tried after the earlier ones.
    pub fn when(
        mut self,
        predicate: impl Fn(&M) -> bool + Send + Sync + 'static,
        agent: AgentRef<M>,
    ) -> Self {
        self.branches.push((Box::new(predicate), agent));
        self
    }

    /// The agent for messages no branch takes.
    pub fn otherwise(mut self, agent: AgentRef<M>) -> Self {
        self.otherwise = Some(agent);
        self
    }

    /// Replies through the chosen agent; an error when no branch matches and none is set.
    pub async fn route(&self, msg: M) -> Result<M, AgentError> {
        let agent = self
            .branches
            .iter()
            .find(|(p, _)| p(&msg))
            .map(|(_, a)| a)
            .or(self.otherwise.as_ref())
            .ok_or_else(|| {
                AgentError::new("router", "no branch matched and no default agent is set")
            })?;
        agent.reply(msg).await
    }
}

/// How a loop ended.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopOutcome<M> {
    /// The last reply (or the input, if no step ran).
    pub msg: M,
    /// Steps run.
    pub steps: usize,
    /// True when `until` held; false when the step limit stopped the loop.
    pub done: bool,
}

/// Feeds an agent its own replies until `until` holds for a reply or `max_steps` ran.
pub async fn loop_until<M: Send + 'static>(
    agent: &AgentRef<M>,
    msg: M,
    until: impl Fn(&M) -> bool,
    max_steps: usize,
) -> Result<LoopOutcome<M>, AgentError> {
    let mut msg = msg;
    for step in 1..=max_steps {
        msg = agent.reply(msg).await?;
        if until(&msg) {
            return Ok(LoopOutcome {
                msg,
                steps: step,
                done: true,
            });
        }
    }
    Ok(LoopOutcome {
        msg,
        steps: max_steps,
        done: false,
    })
}
