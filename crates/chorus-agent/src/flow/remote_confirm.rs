//! Confirmations kept by a chorus server (`/v1/confirmations`), so that the calls a flow's agents
//! wait on show in the server's UI and are approved there.

use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::json;

use super::remote::Remote;
use crate::confirm::{ConfirmError, Confirmation, ConfirmationState, Confirmations};

/// The server's confirmation store, used with each agent's own token. Deciding is for people
/// (the admin token, in the server's UI or API), so [`Confirmations::decide`] is refused here;
/// [`Confirmations::list`] covers the confirmations this flow requested.
pub struct RemoteConfirmations {
    remote: Remote,
    known: Mutex<Vec<(String, String)>>,
}

impl RemoteConfirmations {
    /// The store of the server `remote` talks to.
    pub fn new(remote: Remote) -> Self {
        RemoteConfirmations {
            remote,
            known: Mutex::new(Vec::new()),
        }
    }

    fn remember(&self, c: &Confirmation) {
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if !known.iter().any(|(id, _)| id == &c.id) {
            known.push((c.id.clone(), c.agent.clone()));
        }
    }

    fn owner(&self, id: &str) -> Option<String> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.iter().find(|(k, _)| k == id).map(|(_, a)| a.clone())
    }

    async fn send(
        &self,
        agent: &str,
        request: reqwest::RequestBuilder,
        id: &str,
    ) -> Result<Confirmation, ConfirmError> {
        let token = self
            .remote
            .token(agent)
            .map_err(|e| ConfirmError::Store(e.to_string()))?;
        let response = request
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| ConfirmError::Store(format!("confirmation server: {e}")))?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        match status.as_u16() {
            200 | 201 => serde_json::from_str(&body)
                .map_err(|e| ConfirmError::Store(format!("unreadable confirmation: {e}"))),
            404 => Err(ConfirmError::NotFound(id.to_owned())),
            422 => Err(ConfirmError::ArgumentsChanged(id.to_owned())),
            _ => Err(ConfirmError::Store(format!(
                "the server answered {status}: {body}"
            ))),
        }
    }
}

#[async_trait]
impl Confirmations for RemoteConfirmations {
    async fn request(&self, pending: Confirmation) -> Result<Confirmation, ConfirmError> {
        let url = format!("{}/v1/confirmations", self.remote.base());
        let body = json!({
            "agent": pending.agent, "tool": pending.tool, "call_id": pending.call_id,
            "arguments": pending.arguments, "task_id": pending.task_id,
        });
        let request = self.remote.http().post(url).json(&body);
        let stored = self.send(&pending.agent, request, &pending.id).await?;
        self.remember(&stored);
        Ok(stored)
    }

    async fn get(&self, id: &str) -> Result<Option<Confirmation>, ConfirmError> {
        let Some(agent) = self.owner(id) else {
            return Ok(None);
        };
        let url = format!(
            "{}/v1/confirmations/{}",
            self.remote.base(),
            crate::tools::percent_encode(id)
        );
        match self.send(&agent, self.remote.http().get(url), id).await {
            Ok(c) => Ok(Some(c)),
            Err(ConfirmError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn list(
        &self,
        state: Option<ConfirmationState>,
    ) -> Result<Vec<Confirmation>, ConfirmError> {
        let ids: Vec<String> = {
            let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
            known.iter().map(|(id, _)| id.clone()).collect()
        };
        let mut out = Vec::new();
        for id in ids {
            if let Some(c) = self.get(&id).await?
                && state.is_none_or(|s| s == c.state)
            {
                out.push(c);
            }
        }
        Ok(out)
    }

    async fn decide(
        &self,
        id: &str,
        _approve: bool,
        _by: &str,
        _note: Option<String>,
    ) -> Result<Confirmation, ConfirmError> {
        Err(ConfirmError::Store(format!(
            "confirmation {id} is decided by a person on the server (admin token), not by the flow"
        )))
    }

    async fn consume(&self, id: &str, arguments: &str) -> Result<Confirmation, ConfirmError> {
        let agent = self
            .owner(id)
            .ok_or_else(|| ConfirmError::NotFound(id.to_owned()))?;
        let url = format!(
            "{}/v1/confirmations/{}/consume",
            self.remote.base(),
            crate::tools::percent_encode(id)
        );
        let request = self
            .remote
            .http()
            .post(url)
            .json(&json!({"arguments": arguments}));
        self.send(&agent, request, id).await
    }
}
