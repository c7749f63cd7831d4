//! Running a `handoffs` flow against a running `chorus serve`: publish with each sender's token
//! (`POST /v1/messages`), read each agent's inbox as Server-Sent Events, ack what was handled.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::error::FlowError;
use super::spec::ServerSpec;
use crate::sse::SseReader;

/// A connection to a chorus server on behalf of a flow's agents.
pub struct Remote {
    base: String,
    tokens: HashMap<String, String>,
    idle: Duration,
    http: reqwest::Client,
}

/// One inbox event: the agent, the message id to ack, the document.
type Delivery = (String, String, Value);

/// Deliveries from every inbox read, or the error that stopped a reader.
pub(crate) type Inbox = mpsc::UnboundedReceiver<Result<Delivery, FlowError>>;

#[derive(Deserialize)]
struct InboxEvent {
    message_id: String,
    message: Value,
}

impl Remote {
    /// A connection to `base` (e.g. `http://127.0.0.1:7700`) with the tokens of `spec`.
    pub fn new(base: &str, spec: &ServerSpec) -> Result<Remote, String> {
        let mut tokens = HashMap::new();
        for (sender, value) in &spec.tokens {
            let token = match value.strip_prefix('$') {
                Some(var) => std::env::var(var).map_err(|_| {
                    format!("server.tokens.{sender}: environment variable {var} is not set")
                })?,
                None => value.clone(),
            };
            tokens.insert(sender.clone(), token);
        }
        Ok(Remote {
            base: base.trim_end_matches('/').to_owned(),
            tokens,
            idle: Duration::from_millis(spec.idle_ms.unwrap_or(2000)),
            http: reqwest::Client::new(),
        })
    }

    /// How long without deliveries ends the flow.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// The server's base URL.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Every sender and its token.
    pub(crate) fn tokens(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tokens.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The token of `who`.
    pub(crate) fn token(&self, who: &str) -> Result<&str, FlowError> {
        self.tokens.get(who).map(String::as_str).ok_or_else(|| {
            FlowError::Failed(format!(
                "no token for `{who}`: add it to [server] tokens in the flow file"
            ))
        })
    }

    /// Publishes a document as `sender`.
    pub async fn publish(&self, sender: &str, document: &Value) -> Result<(), FlowError> {
        let response = self
            .http
            .post(format!("{}/v1/messages", self.base))
            .bearer_auth(self.token(sender)?)
            .json(document)
            .send()
            .await
            .map_err(|e| FlowError::Failed(format!("publishing to the server: {e}")))?;
        if response.status().is_success() {
            return Ok(());
        }
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        Err(FlowError::Failed(format!(
            "the server refused a message from {sender} ({status}): {body}"
        )))
    }

    /// Acknowledges a delivery of `agent`'s inbox.
    pub async fn ack(&self, agent: &str, message_id: &str) -> Result<(), FlowError> {
        let url = format!(
            "{}/v1/agents/{}/inbox/{}/ack",
            self.base,
            crate::tools::percent_encode(agent),
            crate::tools::percent_encode(message_id)
        );
        let response = self
            .http
            .post(url)
            .bearer_auth(self.token(agent)?)
            .send()
            .await
            .map_err(|e| FlowError::Failed(format!("acking on the server: {e}")))?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(FlowError::Failed(format!(
                "the server refused to ack {message_id} for {agent}: {}",
                response.status()
            )))
        }
    }

    /// Starts reading the inboxes of `agents`; deliveries (or a reader's error) arrive on the
    /// returned channel. The readers run until the returned handles are aborted.
    pub fn listen(
        &self,
        agents: &[String],
    ) -> Result<(Inbox, Vec<tokio::task::JoinHandle<()>>), FlowError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut tasks = Vec::new();
        for agent in agents {
            let request = self
                .http
                .get(format!(
                    "{}/v1/agents/{}/inbox",
                    self.base,
                    crate::tools::percent_encode(agent)
                ))
                .bearer_auth(self.token(agent)?);
            let tx = tx.clone();
            let agent = agent.clone();
            tasks.push(tokio::spawn(async move {
                if let Err(e) = read_inbox(request, &agent, &tx).await {
                    let _ = tx.send(Err(e));
                }
            }));
        }
        Ok((rx, tasks))
    }
}

async fn read_inbox(
    request: reqwest::RequestBuilder,
    agent: &str,
    tx: &mpsc::UnboundedSender<Result<Delivery, FlowError>>,
) -> Result<(), FlowError> {
    let fail = |e: String| FlowError::Failed(format!("inbox of {agent}: {e}"));
    let response = request.send().await.map_err(|e| fail(e.to_string()))?;
    if !response.status().is_success() {
        return Err(fail(format!("the server answered {}", response.status())));
    }
    let mut events = SseReader::response(response, None);
    let mut seen = HashSet::new();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| fail(e.to_string()))?;
        match event.event.as_str() {
            "message" => {
                let e: InboxEvent = serde_json::from_str(&event.data)
                    .map_err(|e| fail(format!("unreadable event: {e}")))?;
                if seen.insert(e.message_id.clone()) {
                    let _ = tx.send(Ok((agent.to_owned(), e.message_id, e.message)));
                }
            }
            "error" => return Err(fail(event.data)),
            _ => {}
        }
    }
    Ok(())
}
