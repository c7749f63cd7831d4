//! Confirmations kept by a chorus server for a whole flow: one
//! [`HttpConfirmations`](crate::confirm::HttpConfirmations) per agent token, so each call is
//! requested and consumed as its own agent, shows in the server's UI and is approved there.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::remote::Remote;
use crate::confirm::{
    ConfirmError, Confirmation, ConfirmationState, Confirmations, HttpConfirmations,
};

/// The server's confirmation store on behalf of every agent of a flow. Deciding is for people
/// (the admin token, in the server's UI or API), so [`Confirmations::decide`] is refused here;
/// [`Confirmations::list`] covers the confirmations this flow requested.
pub struct RemoteConfirmations {
    agents: HashMap<String, HttpConfirmations>,
    known: Mutex<Vec<(String, String)>>,
}

impl RemoteConfirmations {
    /// The store of the server `remote` talks to, used with each sender's token.
    pub fn new(remote: &Remote) -> Self {
        let agents = remote
            .tokens()
            .map(|(who, token)| (who.to_owned(), HttpConfirmations::new(remote.base(), token)))
            .collect();
        RemoteConfirmations {
            agents,
            known: Mutex::new(Vec::new()),
        }
    }

    fn store(&self, agent: &str) -> Result<&HttpConfirmations, ConfirmError> {
        self.agents.get(agent).ok_or_else(|| {
            ConfirmError::Store(format!(
                "no token for `{agent}`: add it to [server] tokens in the flow file"
            ))
        })
    }

    fn owner(&self, id: &str) -> Option<String> {
        let known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        known.iter().find(|(k, _)| k == id).map(|(_, a)| a.clone())
    }
}

#[async_trait]
impl Confirmations for RemoteConfirmations {
    async fn request(&self, pending: Confirmation) -> Result<Confirmation, ConfirmError> {
        let stored = self.store(&pending.agent)?.request(pending).await?;
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if !known.iter().any(|(id, _)| id == &stored.id) {
            known.push((stored.id.clone(), stored.agent.clone()));
        }
        Ok(stored)
    }

    async fn get(&self, id: &str) -> Result<Option<Confirmation>, ConfirmError> {
        match self.owner(id) {
            Some(agent) => self.store(&agent)?.get(id).await,
            None => Ok(None),
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
        self.store(&agent)?.consume(id, arguments).await
    }
}
