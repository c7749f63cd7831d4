//! Waiting while a person decides the confirmations a delivery halted on, then re-delivering:
//! an agent that failed on the halt (a rule agent) gets the same input again, an agent that
//! answered (an LLM agent telling its sender it needs approval) gets a message saying what the
//! person decided, and resumes its conversation with the call's real (or refused) result.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use chorus_core::{Message, Role};

use super::error::FlowError;
use super::failure::handle_with_strategy;
use crate::agents::{FlowAgent, Item, handle_traced, new_message_id};
use crate::confirm::{Confirmation, ConfirmationState, Confirmations};

/// Called once for each confirmation the flow starts waiting for.
pub type WaitNotice = Arc<dyn Fn(&Confirmation) + Send + Sync>;

/// How long a flow waits for a person's decision, and how it says so.
#[derive(Clone)]
pub struct ApprovalWait {
    /// The longest wait for one halt (`Duration::MAX`: no limit).
    pub timeout: Duration,
    /// How often the store is read while waiting.
    pub poll: Duration,
    /// Told about each confirmation waited for.
    pub notice: WaitNotice,
}

/// What a delivery handled under [`ApprovalWait`] needs.
pub(super) struct Delivery<'a> {
    pub agent: &'a dyn FlowAgent,
    pub input: &'a Item,
    pub task_id: &'a str,
    /// Who the decision message comes from (the person who started the flow).
    pub person: &'a str,
    pub store: &'a dyn Confirmations,
    /// Handle once, without the strategy's in-process retries (a worker retries by nack).
    pub once: bool,
}

/// Where the items of a delivery go as soon as the agent made them (published on the bus or
/// the server), so what an agent says before a wait is out before the wait.
#[async_trait]
pub(super) trait Outbox: Send {
    /// Sends one item.
    async fn send(&mut self, item: Item) -> Result<(), FlowError>;
}

fn failed(e: impl ToString) -> FlowError {
    FlowError::Failed(e.to_string())
}

/// Pending confirmations of `task_id` in `store`.
pub(super) async fn pending(
    store: &dyn Confirmations,
    task_id: &str,
) -> Result<Vec<Confirmation>, FlowError> {
    Ok(store
        .list(Some(ConfirmationState::Pending))
        .await
        .map_err(failed)?
        .into_iter()
        .filter(|c| c.task_id.as_deref() == Some(task_id))
        .collect())
}

impl ApprovalWait {
    /// Handles one delivery, sending what the agent makes to `out`; when it halts on
    /// confirmations, waits for their decisions and re-delivers until the agent no longer halts.
    pub(super) async fn handle(
        &self,
        d: Delivery<'_>,
        out: &mut dyn Outbox,
    ) -> Result<(), FlowError> {
        loop {
            let before: HashSet<String> = pending(d.store, d.task_id)
                .await?
                .into_iter()
                .map(|c| c.id)
                .collect();
            let result = if d.once {
                handle_traced(d.agent, d.input, d.task_id).await
            } else {
                handle_with_strategy(d.agent, d.input, d.task_id).await
            };
            let halted: Vec<Confirmation> = pending(d.store, d.task_id)
                .await?
                .into_iter()
                .filter(|c| {
                    c.agent == d.agent.name() && (result.is_err() || !before.contains(&c.id))
                })
                .collect();
            let retry = result.is_err();
            if halted.is_empty() || !retry {
                for item in result.map_err(failed)? {
                    out.send(item).await?;
                }
            }
            if halted.is_empty() {
                return Ok(());
            }
            let decided = self.wait(d.store, &halted).await?;
            if !retry {
                let message = decision_message(&decided, d.person, d.agent.name());
                return out.send(Item::Message(message)).await;
            }
        }
    }

    /// Waits until every one of `halted` is decided; fails naming the pending ids on timeout.
    async fn wait(
        &self,
        store: &dyn Confirmations,
        halted: &[Confirmation],
    ) -> Result<Vec<Confirmation>, FlowError> {
        for c in halted {
            (self.notice)(c);
        }
        let started = Instant::now();
        loop {
            let mut decided = Vec::new();
            let mut waiting = Vec::new();
            for c in halted {
                match store.get(&c.id).await.map_err(failed)? {
                    Some(now) if now.state != ConfirmationState::Pending => decided.push(now),
                    _ => waiting.push(c.id.as_str()),
                }
            }
            if waiting.is_empty() {
                return Ok(decided);
            }
            if started.elapsed() >= self.timeout {
                return Err(FlowError::Failed(format!(
                    "no decision within {} s; still pending: {}",
                    self.timeout.as_secs_f64(),
                    waiting.join(", ")
                )));
            }
            let left = self.timeout.saturating_sub(started.elapsed());
            tokio::time::sleep(self.poll.min(left)).await;
        }
    }
}

/// The message that tells `agent` what a person decided, from `person`.
fn decision_message(decided: &[Confirmation], person: &str, agent: &str) -> Message {
    let lines: Vec<String> = decided
        .iter()
        .map(|c| {
            let word = if c.state == ConfirmationState::Rejected {
                "rejected"
            } else {
                "approved"
            };
            let note = c
                .note
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            format!(
                "I {word} the call {}({}), confirmation {}{note}.",
                c.tool, c.arguments, c.id
            )
        })
        .collect();
    let mut message = Message::new(Role::User, lines.join("\n"));
    message.id = Some(new_message_id());
    message.name = Some(person.to_owned());
    message.recipient = Some(agent.to_owned());
    message
}
