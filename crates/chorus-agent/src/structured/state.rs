//! A loop that keeps its `state` data part between steps: each step sends the request with
//! the current state, and the reply (a JSON object) is merged into the state as a patch.

use chorus_context::data::{current, deep_merge};
use chorus_core::DataPart;
use serde_json::{Value, json};

use super::input::{STATE, replace_parts};
use super::{StructuredError, StructuredReply, StructuredRequest};
use crate::cost::UsageTotals;
use crate::model::ModelClient;

/// A request run step by step with a persistent `state`.
#[derive(Debug, Clone)]
pub struct StateLoop {
    request: StructuredRequest,
    declaration: DataPart,
    /// The current state.
    pub state: Value,
    /// Steps run so far.
    pub steps: u32,
    /// Usage and cost of all steps.
    pub usage: UsageTotals,
}

impl StateLoop {
    /// A loop over `request`; the initial state is its merged `state` data parts (`{}` if none).
    pub fn new(request: StructuredRequest) -> Self {
        let declaration = current(&request.messages, STATE, None)
            .map(|m| m.to_part())
            .unwrap_or_else(|| DataPart {
                kind: Some(STATE.into()),
                data: json!({}),
                ..DataPart::default()
            });
        StateLoop {
            state: declaration.data.clone(),
            request,
            declaration,
            steps: 0,
            usage: UsageTotals::default(),
        }
    }

    /// The request of the next step: the state parts replaced by one part with the state.
    pub fn next_request(&self) -> StructuredRequest {
        let part = DataPart {
            data: self.state.clone(),
            ..self.declaration.clone()
        };
        StructuredRequest {
            messages: replace_parts(&self.request.messages, STATE, part),
            ..self.request.clone()
        }
    }

    /// Runs one step and merges the reply's JSON object into the state.
    pub async fn step(
        &mut self,
        client: &dyn ModelClient,
    ) -> Result<StructuredReply, StructuredError> {
        let reply = self.next_request().run(client).await?;
        self.steps += 1;
        self.usage.merge(&reply.usage);
        if let Some(patch) = reply.value.as_ref().filter(|v| v.is_object()) {
            deep_merge(&mut self.state, patch);
        }
        Ok(reply)
    }

    /// Steps until `done(state)` holds or `max_steps` steps have run; returns whether `done`
    /// was reached.
    pub async fn run_until(
        &mut self,
        client: &dyn ModelClient,
        max_steps: u32,
        done: impl Fn(&Value) -> bool,
    ) -> Result<bool, StructuredError> {
        while !done(&self.state) {
            if self.steps >= max_steps {
                return Ok(false);
            }
            self.step(client).await?;
        }
        Ok(true)
    }
}
