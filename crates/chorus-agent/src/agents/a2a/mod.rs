//! A remote A2A agent in a flow (`kind = "a2a"`): what it is handed goes over A2A v1.0 to the
//! agent of a card, and the remote task's answer comes back as chorus messages.

mod answer;
mod remote;

use std::time::Duration;

use async_trait::async_trait;
use chorus_bus::AgentError;
use serde_json::{Value, json};

use super::{FlowAgent, Item};
use answer::{answer_of, incoming, needs_input, outgoing, settled};
use remote::Remote;

/// How often an unsettled remote task is read again.
const POLL: Duration = Duration::from_millis(200);

/// A flow agent that is a remote A2A agent.
pub struct A2aAgent {
    name: String,
    remote: Remote,
    timeout: Duration,
    /// The remote task waiting for input, by chorus task: the next item of that chorus task
    /// continues it (kept in this process only).
    waiting: std::sync::Mutex<std::collections::HashMap<String, Value>>,
}

impl A2aAgent {
    /// The agent `name` of the flow, reached through the card at `card_url` with `token` (a
    /// bearer token) and waiting at most `timeout` for an answer.
    pub fn new(name: &str, card_url: &str, token: Option<String>, timeout: Duration) -> A2aAgent {
        A2aAgent {
            name: name.to_owned(),
            remote: Remote::new(card_url, token, timeout),
            timeout,
            waiting: std::sync::Mutex::default(),
        }
    }

    fn fail(&self, message: impl Into<String>) -> AgentError {
        AgentError::new(&self.name, message)
    }

    /// `SendStreamingMessage`, followed until the task settles (or the stream ends, or the
    /// timeout passes): its last state, answer and the remote task id.
    async fn streamed(
        &self,
        message: Value,
    ) -> Result<(String, Option<Value>, Option<Value>), AgentError> {
        let mut state = "TASK_STATE_SUBMITTED".to_owned();
        let mut answer = None;
        let mut task = None;
        let followed = self.remote.stream(
            "SendStreamingMessage",
            json!({"message": message}),
            |event| {
                if let Some(id) = event
                    .pointer("/task/id")
                    .or_else(|| event.pointer("/statusUpdate/taskId"))
                {
                    task = Some(id.clone());
                }
                let update = event
                    .get("statusUpdate")
                    .map(|u| json!({"task": {"status": u["status"]}}));
                let (now, said) = answer_of(update.as_ref().unwrap_or(event));
                state = now;
                if said.is_some() {
                    answer = said;
                }
                !settled(&state)
            },
        );
        tokio::time::timeout(self.timeout, followed)
            .await
            .map_err(|_| {
                self.fail(format!(
                    "the remote task is still {state} after {} s",
                    self.timeout.as_secs()
                ))
            })?
            .map_err(|e| self.fail(e))?;
        Ok((state, answer, task))
    }
}

#[async_trait]
impl FlowAgent for A2aAgent {
    fn name(&self) -> &str {
        &self.name
    }

    async fn handle(&self, input: &Item, task_id: &str) -> Result<Vec<Item>, AgentError> {
        let mut message = outgoing(input, task_id);
        let continued = self
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(task_id);
        if let Some(remote_task) = continued {
            message["taskId"] = remote_task;
        }
        let (mut state, mut answer, remote_task) =
            if self.remote.streams().await.map_err(|e| self.fail(e))? {
                self.streamed(message).await?
            } else {
                let result = self
                    .remote
                    .call("SendMessage", json!({"message": message}))
                    .await
                    .map_err(|e| self.fail(e))?;
                let (state, answer) = answer_of(&result);
                (state, answer, result.pointer("/task/id").cloned())
            };
        let deadline = tokio::time::Instant::now() + self.timeout;
        while let Some(id) = remote_task.as_ref().filter(|_| !settled(&state)) {
            if tokio::time::Instant::now() >= deadline {
                return Err(self.fail(format!(
                    "the remote task {id} is still {state} after {} s",
                    self.timeout.as_secs()
                )));
            }
            tokio::time::sleep(POLL).await;
            let task = self
                .remote
                .call("GetTask", json!({"id": id}))
                .await
                .map_err(|e| self.fail(e))?;
            (state, answer) = answer_of(&task);
        }
        if let (Some(id), true) = (remote_task, needs_input(&state)) {
            self.waiting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(task_id.to_owned(), id);
        }
        incoming(&self.name, input, task_id, &state, answer.as_ref()).map_err(|e| self.fail(e))
    }
}
