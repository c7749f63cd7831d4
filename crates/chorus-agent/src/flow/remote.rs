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
    renew_every: Duration,
    http: reqwest::Client,
}

/// One inbox event: the inbox it came from, the message id and attempt to settle, the document.
#[derive(Debug, Clone)]
pub struct InboxDelivery {
    /// The inbox (an agent or a pool) that delivered it.
    pub inbox: String,
    /// The message id.
    pub message_id: String,
    /// 1 on the first delivery, more on redeliveries.
    pub attempt: u32,
    /// The document as published.
    pub message: Value,
}

/// Deliveries from every inbox read, or the error that stopped a reader.
pub(crate) type Inbox = mpsc::UnboundedReceiver<Result<InboxDelivery, FlowError>>;

#[derive(Deserialize)]
struct InboxEvent {
    message_id: String,
    #[serde(default = "first_attempt")]
    attempt: u32,
    message: Value,
}

fn first_attempt() -> u32 {
    1
}

/// How a worker settles a delivery it held.
#[derive(Debug, Clone, PartialEq)]
pub enum Settlement {
    /// Done: never delivered again.
    Ack,
    /// Deliver again after the delay.
    Nack(Duration),
    /// Still working: the lease starts again.
    InProgress,
    /// Given up: a dead letter with the error.
    DeadLetter(String),
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
            renew_every: Duration::from_millis(spec.renew_ms.unwrap_or(10_000).max(1)),
            http: reqwest::Client::new(),
        })
    }

    /// How often a delivery being handled has its lease extended (`server.renew_ms`).
    pub fn renew_every(&self) -> Duration {
        self.renew_every
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

    /// The server's journal (see [`crate::journal`]), used with each agent's token.
    pub fn journal(&self) -> crate::journal::HttpJournal {
        crate::journal::HttpJournal::new(&self.base, self.tokens())
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
        self.settle(agent, agent, message_id, None, &Settlement::Ack)
            .await
    }

    /// Settles the delivery `attempt` (any, when `None`) of `message_id` held by `inbox`,
    /// as `who` (the agent whose token reads the inbox).
    pub async fn settle(
        &self,
        inbox: &str,
        who: &str,
        message_id: &str,
        attempt: Option<u32>,
        how: &Settlement,
    ) -> Result<(), FlowError> {
        let (word, body) = match how {
            Settlement::Ack => ("ack", None),
            Settlement::Nack(delay) => (
                "nack",
                Some(
                    serde_json::json!({"delay_ms": u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)}),
                ),
            ),
            Settlement::InProgress => ("in-progress", None),
            Settlement::DeadLetter(error) => {
                ("dead-letter", Some(serde_json::json!({"error": error})))
            }
        };
        let mut url = format!(
            "{}/v1/agents/{}/inbox/{}/{word}",
            self.base,
            crate::tools::percent_encode(inbox),
            crate::tools::percent_encode(message_id)
        );
        if let Some(attempt) = attempt {
            url.push_str(&format!("?attempt={attempt}"));
        }
        let mut request = self.http.post(url).bearer_auth(self.token(who)?);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| FlowError::Failed(format!("{word} on the server: {e}")))?;
        if response.status().is_success() {
            return Ok(());
        }
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        Err(FlowError::Failed(format!(
            "the server refused to {word} {message_id} for {inbox} ({status}): {body}"
        )))
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
            tasks.push(self.read(agent, agent, None, None, tx.clone())?);
        }
        Ok((rx, tasks))
    }

    /// Starts reading `inbox` (the agent's own, or a pool it may read) as `who`, holding at
    /// most `max_in_flight` unsettled deliveries (the server's default when `None`), resuming
    /// after the last event `position` holds and keeping it up to date.
    pub(crate) fn listen_as(
        &self,
        inbox: &str,
        who: &str,
        max_in_flight: Option<usize>,
        position: &StreamPosition,
    ) -> Result<(Inbox, tokio::task::JoinHandle<()>), FlowError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let task = self.read(inbox, who, max_in_flight, Some(position.clone()), tx)?;
        Ok((rx, task))
    }

    fn read(
        &self,
        inbox: &str,
        who: &str,
        max_in_flight: Option<usize>,
        position: Option<StreamPosition>,
        tx: mpsc::UnboundedSender<Result<InboxDelivery, FlowError>>,
    ) -> Result<tokio::task::JoinHandle<()>, FlowError> {
        let mut url = format!(
            "{}/v1/agents/{}/inbox",
            self.base,
            crate::tools::percent_encode(inbox)
        );
        if let Some(n) = max_in_flight {
            url.push_str(&format!("?max_in_flight={n}"));
        }
        let mut request = self.http.get(url).bearer_auth(self.token(who)?);
        if let Some(last) = position.as_ref().and_then(StreamPosition::last_event_id) {
            request = request.header("Last-Event-ID", last);
        }
        let inbox = inbox.to_owned();
        Ok(tokio::spawn(async move {
            if let Err(e) = read_inbox(request, &inbox, position.as_ref(), &tx).await {
                let _ = tx.send(Err(e));
            }
        }))
    }
}

/// Where a reader of one inbox got to, kept across its reconnections: the id of the last event
/// read (sent back as `Last-Event-ID`, so that the server keeps what was read instead of
/// sending it again) and the reconnection delay the server asked for (`retry:`).
#[derive(Debug, Clone, Default)]
pub(crate) struct StreamPosition(std::sync::Arc<std::sync::Mutex<Position>>);

/// What a [`StreamPosition`] holds.
#[derive(Debug, Default)]
struct Position {
    last_event_id: Option<String>,
    retry: Option<Duration>,
}

impl StreamPosition {
    fn held(&self) -> std::sync::MutexGuard<'_, Position> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn last_event_id(&self) -> Option<String> {
        self.held().last_event_id.clone()
    }

    /// How long to wait before reconnecting: the server's `retry:` (kept within 100 ms to
    /// 30 s: a server asking for none would be hammered while it is down), else `otherwise`.
    pub(crate) fn retry_or(&self, otherwise: Duration) -> Duration {
        let retry = self.held().retry;
        retry.map_or(otherwise, |r| {
            r.clamp(Duration::from_millis(100), Duration::from_secs(30))
        })
    }

    /// Notes the last event id (the parser carries it from event to event; an empty one was
    /// reset by the server) and the `retry:` of an event read. An id that cannot be sent back
    /// as a header is not kept.
    fn read(&self, event: &crate::sse::Event) {
        let mut position = self.held();
        let sendable = reqwest::header::HeaderValue::from_str(&event.id).is_ok();
        position.last_event_id = (sendable && !event.id.is_empty()).then(|| event.id.clone());
        if event.retry.is_some() {
            position.retry = event.retry;
        }
    }
}

async fn read_inbox(
    request: reqwest::RequestBuilder,
    agent: &str,
    position: Option<&StreamPosition>,
    tx: &mpsc::UnboundedSender<Result<InboxDelivery, FlowError>>,
) -> Result<(), FlowError> {
    let fail = |e: String| FlowError::Failed(format!("inbox of {agent}: {e}"));
    let response = request.send().await.map_err(|e| fail(e.to_string()))?;
    let status = response.status();
    if status.is_client_error() && !matches!(status.as_u16(), 408 | 429) {
        let body = response.text().await.unwrap_or_default();
        let said: String = body.chars().take(300).collect();
        return Err(FlowError::Refused(format!(
            "inbox of {agent}: the server answered {status}: {said}"
        )));
    }
    if !status.is_success() {
        return Err(fail(format!("the server answered {status}")));
    }
    let mut events = SseReader::response(response, None);
    // The deliveries seen on this stream, the oldest forgotten past SEEN (a long-lived worker's
    // stream must not grow without bound; a repeat is only ever a recent one).
    const SEEN: usize = 4096;
    let (mut seen, mut order) = (HashSet::new(), std::collections::VecDeque::new());
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| fail(e.to_string()))?;
        // A message's event counts as read once it is handed on (below); an unreadable one is
        // not, so that the server sends it again on the next connection.
        if let Some(position) = position.filter(|_| event.event != "message") {
            position.read(&event);
        }
        match event.event.as_str() {
            "message" => {
                let e: InboxEvent = serde_json::from_str(&event.data)
                    .map_err(|e| fail(format!("unreadable event: {e}")))?;
                // A reconnection sends held deliveries again; a redelivery has a new attempt.
                let key = (e.message_id.clone(), e.attempt);
                if seen.insert(key.clone()) {
                    order.push_back(key);
                    if order.len() > SEEN
                        && let Some(old) = order.pop_front()
                    {
                        seen.remove(&old);
                    }
                    let _ = tx.send(Ok(InboxDelivery {
                        inbox: agent.to_owned(),
                        message_id: e.message_id,
                        attempt: e.attempt,
                        message: e.message,
                    }));
                }
                if let Some(position) = position {
                    position.read(&event);
                }
            }
            "error" => return Err(fail(event.data)),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_position_keeps_the_last_id_and_the_servers_retry() {
        let position = StreamPosition::default();
        let second = Duration::from_secs(1);
        assert_eq!(position.retry_or(second), second, "none asked for yet");
        assert_eq!(position.last_event_id(), None);
        let event = |id: &str, retry| crate::sse::Event {
            event: "message".into(),
            data: "{}".into(),
            id: id.into(),
            retry,
        };
        position.read(&event("r-1-1", Some(Duration::from_millis(1500))));
        position.read(&event("r-1-2", None));
        let also = position.clone();
        assert_eq!(also.last_event_id().as_deref(), Some("r-1-2"));
        assert_eq!(also.retry_or(second), Duration::from_millis(1500));
        // The server reset the id; an id no header can carry is not sent back.
        for id in ["", "r-1-\u{1}3"] {
            position.read(&event("r-1-3", None));
            position.read(&event(id, None));
            assert_eq!(position.last_event_id(), None, "{id:?}");
        }
        position.read(&event("r-1-4", Some(Duration::ZERO)));
        assert_eq!(position.retry_or(second), Duration::from_millis(100));
        position.read(&event("r-1-5", Some(Duration::from_secs(3600))));
        assert_eq!(position.retry_or(second), Duration::from_secs(30));
    }
}
