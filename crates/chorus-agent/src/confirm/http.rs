//! Confirmations kept by a running `chorus serve`, through its HTTP API: the agent's calls wait
//! where people see them (the server's web UI).

use async_trait::async_trait;
use chorus_bus::Page;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde_json::{Value, json};

use super::{ConfirmError, Confirmation, ConfirmationState, Confirmations};

/// Confirmations asked for at once when the whole list is read.
const PAGE: usize = 1000;

/// The server's answer to a listing.
#[derive(serde::Deserialize)]
struct Listed {
    items: Vec<Confirmation>,
    next: Option<String>,
    total: Option<u64>,
}

/// A [`Confirmations`] store that is a `chorus serve` at `base` (e.g. `http://127.0.0.1:7700`).
///
/// Requesting, reading and consuming use the agent's token; listing and deciding need the
/// admin token ([`HttpConfirmations::with_admin_token`]).
#[derive(Debug, Clone)]
pub struct HttpConfirmations {
    base: String,
    agent_token: String,
    admin_token: Option<String>,
    client: reqwest::Client,
}

impl HttpConfirmations {
    /// The server at `base`, called with `agent_token`.
    pub fn new(base: impl Into<String>, agent_token: impl Into<String>) -> Self {
        Self {
            base: base.into().trim_end_matches('/').to_owned(),
            agent_token: agent_token.into(),
            admin_token: None,
            client: reqwest::Client::new(),
        }
    }

    /// Also lists and decides, with the admin token.
    pub fn with_admin_token(mut self, token: impl Into<String>) -> Self {
        self.admin_token = Some(token.into());
        self
    }

    fn admin(&self, what: &str) -> Result<&str, ConfirmError> {
        self.admin_token.as_deref().ok_or_else(|| {
            ConfirmError::Store(format!(
                "{what} needs the server's admin token (HttpConfirmations::with_admin_token)"
            ))
        })
    }

    /// Sends one call; the status and the JSON answer.
    async fn call(
        &self,
        method: Method,
        path: &str,
        token: &str,
        body: Option<&impl Serialize>,
    ) -> Result<(StatusCode, Value), ConfirmError> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| ConfirmError::Store(format!("{}{path}: {e}", self.base)))?;
        let status = resp.status();
        let value = resp.json().await.unwrap_or(Value::Null);
        Ok((status, value))
    }

    /// The confirmation in a successful answer, or the error an unsuccessful one means.
    async fn answer(
        &self,
        id: &str,
        (status, value): (StatusCode, Value),
    ) -> Result<Confirmation, ConfirmError> {
        let message = value["message"].as_str().unwrap_or("").to_owned();
        match status {
            s if s.is_success() => serde_json::from_value(value).map_err(|e| {
                ConfirmError::Store(format!("the server's answer is not a confirmation: {e}"))
            }),
            StatusCode::NOT_FOUND => Err(ConfirmError::NotFound(id.to_owned())),
            StatusCode::UNPROCESSABLE_ENTITY => Err(ConfirmError::ArgumentsChanged(id.to_owned())),
            StatusCode::CONFLICT => {
                let state = match self.get(id).await {
                    Ok(Some(c)) => c.state,
                    _ => ConfirmationState::Pending,
                };
                Err(ConfirmError::WrongState {
                    id: id.to_owned(),
                    state,
                    hint: message,
                })
            }
            other => Err(ConfirmError::Store(format!("HTTP {other}: {message}"))),
        }
    }
}

#[async_trait]
impl Confirmations for HttpConfirmations {
    async fn request(&self, pending: Confirmation) -> Result<Confirmation, ConfirmError> {
        let body = json!({
            "agent": pending.agent,
            "tool": pending.tool,
            "call_id": pending.call_id,
            "arguments": pending.arguments,
            "task_id": pending.task_id,
        });
        let reply = self
            .call(
                Method::POST,
                "/v1/confirmations",
                &self.agent_token,
                Some(&body),
            )
            .await?;
        self.answer(&pending.id, reply).await
    }

    async fn get(&self, id: &str) -> Result<Option<Confirmation>, ConfirmError> {
        let token = self.admin_token.as_deref().unwrap_or(&self.agent_token);
        let path = format!("/v1/confirmations/{id}");
        let (status, value) = self.call(Method::GET, &path, token, None::<&()>).await?;
        match status {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => serde_json::from_value(value)
                .map(Some)
                .map_err(|e| ConfirmError::Store(format!("not a confirmation: {e}"))),
            other => Err(ConfirmError::Store(format!(
                "HTTP {other}: {}",
                value["message"].as_str().unwrap_or("")
            ))),
        }
    }

    async fn list(
        &self,
        state: Option<ConfirmationState>,
    ) -> Result<Vec<Confirmation>, ConfirmError> {
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.page(state, after.as_deref(), PAGE).await?;
            all.extend(page.items);
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(all),
            }
        }
    }

    async fn page(
        &self,
        state: Option<ConfirmationState>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Confirmation>, ConfirmError> {
        let token = self.admin("listing confirmations")?;
        // The query encoded as a URL's (the cursor is opaque: any character may need it).
        let mut url = reqwest::Url::parse("http://query.invalid/")
            .map_err(|e| ConfirmError::Store(e.to_string()))?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("limit", &limit.to_string());
            if let Some(s) = state {
                query.append_pair("state", s.as_str());
            }
            if let Some(a) = after {
                query.append_pair("after", a);
            }
        }
        let path = format!("/v1/confirmations?{}", url.query().unwrap_or_default());
        let (status, value) = self.call(Method::GET, &path, token, None::<&()>).await?;
        if !status.is_success() {
            return Err(ConfirmError::Store(format!(
                "HTTP {status}: {}",
                value["message"].as_str().unwrap_or("")
            )));
        }
        let page: Listed = serde_json::from_value(value)
            .map_err(|e| ConfirmError::Store(format!("not a page of confirmations: {e}")))?;
        Ok(Page {
            items: page.items,
            next: page.next,
            total: page.total,
        })
    }

    async fn decide(
        &self,
        id: &str,
        approve: bool,
        _by: &str,
        note: Option<String>,
    ) -> Result<Confirmation, ConfirmError> {
        let token = self.admin("deciding a confirmation")?;
        let action = if approve { "approve" } else { "reject" };
        let path = format!("/v1/confirmations/{id}/{action}");
        let reply = self
            .call(Method::POST, &path, token, Some(&json!({"note": note})))
            .await?;
        self.answer(id, reply).await
    }

    async fn consume(&self, id: &str, arguments: &str) -> Result<Confirmation, ConfirmError> {
        let path = format!("/v1/confirmations/{id}/consume");
        let body = json!({"arguments": arguments});
        let reply = self
            .call(Method::POST, &path, &self.agent_token, Some(&body))
            .await?;
        self.answer(id, reply).await
    }
}
