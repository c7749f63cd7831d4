//! One agent of a flow as a long-lived worker on a chorus server (`chorus agent run`): it
//! consumes its inbox (or a pool's, competing with the pool's other replicas), handles each
//! delivery while it keeps the lease alive, and settles it: ack on success, nack with backoff on
//! a failure while retries are left, the strategy's escalation and fallback or a dead letter
//! when they are spent. A failure is never acked as if it were done.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chorus_bus::AgentError;
use tokio::task::JoinSet;

use super::approval::{ApprovalWait, Delivery, Outbox};
use super::error::FlowError;
use super::failure::give_up;
use super::lease::with_lease;
use super::outputs::{in_task, once};
use super::remote::{InboxDelivery, Remote, Settlement, StreamPosition};
use super::run::Flow;
use super::spec::SpecError;
use crate::agents::{FlowAgent, Item, handle_traced};
use crate::confirm::Confirmations;
use crate::journal::Journal;

/// How a worker consumes and settles.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The inbox to consume: the agent's own when `None`, else a pool it may read.
    pub inbox: Option<String>,
    /// Deliveries handled at once (and held unsettled at most).
    pub max_in_flight: usize,
    /// Retries of a failed delivery when its packet's `failure_handling_strategy` names no
    /// `retry_count` (and for chorus messages).
    pub retries: u32,
    /// The nack delay after the first failure; doubled after each further one.
    pub backoff: Duration,
    /// The longest nack delay.
    pub max_backoff: Duration,
    /// How often the lease of a delivery being handled is extended (`in-progress`); well within
    /// the server's ack wait.
    pub renew_every: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            inbox: None,
            max_in_flight: 1,
            retries: 2,
            backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            renew_every: Duration::from_secs(10),
        }
    }
}

impl WorkerOptions {
    /// The nack delay after failed attempt `attempt` (1 for the first).
    pub fn backoff_after(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(20);
        self.backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// Told about each item a worker sent (published on the hub).
pub type SentNotice = Arc<dyn Fn(&Item) + Send + Sync>;

/// What a worker did before it stopped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerReport {
    /// Deliveries handled and acked (escalated ones included).
    pub acked: u64,
    /// Failed deliveries given back to be tried again later.
    pub retried: u64,
    /// Failed deliveries handed to `escalate_to` / answered with the `fallback_action`.
    pub escalated: u64,
    /// Failed deliveries made dead letters.
    pub dead_lettered: u64,
    /// Deliveries held at shutdown and handed back unsettled.
    pub handed_back: u64,
}

/// How one delivery was settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Acked,
    Retried,
    Escalated,
    DeadLettered,
}

/// One agent of a flow, ready to consume its inbox on a server.
pub struct Worker {
    agent: Arc<dyn FlowAgent>,
    journal: Arc<dyn Journal>,
    remote: Arc<Remote>,
    confirmations: Arc<dyn Confirmations>,
    approval: Option<ApprovalWait>,
    person: String,
    options: WorkerOptions,
    sent: Option<SentNotice>,
    /// The deliveries being handled, by message id, with their newest attempts.
    held: Held,
}

impl Flow {
    /// Agent `name` of this flow as a worker on the server `remote` talks to.
    pub fn worker(
        &self,
        name: &str,
        remote: Remote,
        options: WorkerOptions,
    ) -> Result<Worker, FlowError> {
        let agent = self.agents.get(name).cloned().ok_or_else(|| {
            let names: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            SpecError {
                location: "agents".into(),
                message: format!(
                    "no agent named `{name}` in the flow; its agents are: {}",
                    names.join(", ")
                ),
            }
        })?;
        remote.token(name)?;
        Ok(Worker {
            agent,
            journal: Arc::new(remote.journal()),
            remote: Arc::new(remote),
            confirmations: self.confirmations.clone(),
            approval: self.approval.clone(),
            person: self.spec.input.from.clone(),
            options,
            sent: None,
            held: Held::default(),
        })
    }
}

/// The deliveries a worker holds, by message id, with their attempts.
type Held = Arc<Mutex<HashMap<String, u32>>>;

impl Worker {
    /// The same worker telling `notice` about each item it sends, once it is published.
    pub fn on_sent(mut self, notice: SentNotice) -> Worker {
        self.sent = Some(notice);
        self
    }

    /// The inbox consumed.
    pub fn inbox(&self) -> &str {
        self.options
            .inbox
            .as_deref()
            .unwrap_or_else(|| self.agent.name())
    }

    /// Consumes the inbox until `shutdown` completes, then hands back what it holds (a nack
    /// without delay: another replica takes it at once) and reports. A broken inbox stream is
    /// opened again after the server's `retry:` (a second when it sent none), with the last
    /// event's id as `Last-Event-ID`: the server keeps what the worker read, unsent, and the
    /// attempts of the messages its handlers still work on are not used up.
    pub async fn run(
        self: Arc<Self>,
        shutdown: impl Future<Output = ()>,
    ) -> Result<WorkerReport, FlowError> {
        let mut report = WorkerReport::default();
        let held = self.held.clone();
        // Set when the server refuses the agent for good: the worker stops and says why.
        let mut refused = None;
        let mut working: JoinSet<Result<Outcome, FlowError>> = JoinSet::new();
        tokio::pin!(shutdown);
        let name = self.agent.name().to_owned();
        let position = StreamPosition::default();
        'connect: loop {
            let max_in_flight = Some(self.options.max_in_flight);
            let (mut rx, reader) =
                self.remote
                    .listen_as(self.inbox(), &name, max_in_flight, &position)?;
            let _reader = AbortOnDrop(reader);
            loop {
                tokio::select! {
                    () = &mut shutdown => break 'connect,
                    Some(done) = working.join_next() => {
                        count(&mut report, done);
                    }
                    next = rx.recv() => match next {
                        Some(Ok(d)) => {
                            let mut holding = held.lock().unwrap_or_else(|e| e.into_inner());
                            if let Some(attempt) = holding.get_mut(&d.message_id) {
                                // Handed out again while its handler runs (the stream broke
                                // and the hub gave it back): the handler goes on and settles it
                                // under this newest attempt; a second handler would race it.
                                *attempt = d.attempt;
                                continue;
                            }
                            holding.insert(d.message_id.clone(), d.attempt);
                            drop(holding);
                            let (me, held) = (self.clone(), held.clone());
                            working.spawn(async move {
                                let id = d.message_id.clone();
                                let outcome = me.work(d).await;
                                held.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                                outcome
                            });
                        }
                        Some(Err(e @ FlowError::Refused(_))) => {
                            refused = Some(e);
                            break 'connect;
                        }
                        other => {
                            match other {
                                Some(Err(e)) => tracing::warn!(inbox = %self.inbox(), error = %e, "the inbox stream broke; reconnecting"),
                                _ => tracing::info!(inbox = %self.inbox(), "the inbox stream ended; reconnecting"),
                            }
                            tokio::select! {
                                () = &mut shutdown => break 'connect,
                                () = tokio::time::sleep(position.retry_or(Duration::from_secs(1))) => continue 'connect,
                            }
                        }
                    },
                }
            }
        }
        working.abort_all();
        while let Some(done) = working.join_next().await {
            if !done
                .as_ref()
                .is_err_and(tokio::task::JoinError::is_cancelled)
            {
                count(&mut report, done);
            }
        }
        let left: Vec<(String, u32)> = held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .collect();
        for (message_id, attempt) in left {
            let back = Settlement::Nack(Duration::ZERO);
            match self
                .remote
                .settle(self.inbox(), &name, &message_id, Some(attempt), &back)
                .await
            {
                Ok(()) => report.handed_back += 1,
                Err(e) => {
                    tracing::warn!(%message_id, error = %e, "not handed back; it returns after the ack wait");
                }
            }
        }
        match refused {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }

    /// Handles one delivery while extending its lease, then settles it.
    async fn work(&self, d: InboxDelivery) -> Result<Outcome, FlowError> {
        let input = match Item::from_json(&d.message) {
            Ok(input) => input,
            Err(e) => {
                let error = format!("unreadable delivery: {e}");
                self.settle(&d, Settlement::DeadLetter(error)).await?;
                return Ok(Outcome::DeadLettered);
            }
        };
        let task_id = input
            .task_id()
            .map_or_else(|| d.message_id.clone(), str::to_owned);
        let mut out = Publisher {
            remote: &self.remote,
            task_id: &task_id,
            sent: self.sent.as_ref(),
        };
        let extend = || async {
            if let Err(e) = self.settle(&d, Settlement::InProgress).await {
                tracing::warn!(message_id = %d.message_id, error = %e, "the lease was not extended");
            }
        };
        let handled = with_lease(
            self.handle(&input, &task_id, &mut out),
            self.options.renew_every,
            extend,
        )
        .await;
        let error = match handled {
            Ok(()) => {
                self.settle(&d, Settlement::Ack).await?;
                return Ok(Outcome::Acked);
            }
            Err(e) => e,
        };
        let retries = match &input {
            Item::Handoff(p) => p
                .instructions
                .failure_handling_strategy
                .as_ref()
                .and_then(|s| s.retry_count),
            Item::Message(_) => None,
        }
        .unwrap_or(self.options.retries);
        if d.attempt <= retries {
            tracing::info!(message_id = %d.message_id, attempt = d.attempt, %error, "failed; retrying later");
            let delay = self.options.backoff_after(d.attempt);
            self.settle(&d, Settlement::Nack(delay)).await?;
            return Ok(Outcome::Retried);
        }
        // The escalation and the fallback notice are this delivery's outputs: recorded like
        // any others, so that a redelivery sends the same ones again.
        let agent = self.agent.name();
        let given_up = match &input {
            Item::Handoff(packet) => {
                let escalate = || async { give_up(agent, packet, error) };
                once(self.journal.as_ref(), agent, &input, &task_id, escalate).await
            }
            Item::Message(_) => Err(error),
        };
        match given_up {
            Ok(items) => {
                for item in items {
                    out.send(item).await?;
                }
                self.settle(&d, Settlement::Ack).await?;
                Ok(Outcome::Escalated)
            }
            Err(e) => {
                tracing::warn!(message_id = %d.message_id, attempt = d.attempt, error = %e, "failed; retries spent, dead-lettered");
                self.settle(&d, Settlement::DeadLetter(e.to_string()))
                    .await?;
                Ok(Outcome::DeadLettered)
            }
        }
    }

    /// Runs the agent on `input` once, sending what it makes; waits for approvals when set.
    async fn handle(
        &self,
        input: &Item,
        task_id: &str,
        out: &mut Publisher<'_>,
    ) -> Result<(), AgentError> {
        let fail = |e: FlowError| AgentError::new(self.agent.name(), e.to_string());
        if let Some(wait) = &self.approval {
            let delivery = Delivery {
                agent: self.agent.as_ref(),
                input,
                task_id,
                person: &self.person,
                store: self.confirmations.as_ref(),
                once: true,
            };
            return wait.handle(delivery, out).await.map_err(fail);
        }
        // What this delivery sends is recorded before it is sent: a redelivery (the worker
        // stopped before its ack) sends the same items again, which the hub takes as duplicates.
        let agent = self.agent.as_ref();
        let items = once(self.journal.as_ref(), agent.name(), input, task_id, || {
            handle_traced(agent, input, task_id)
        })
        .await?;
        for item in items {
            out.send(item).await.map_err(fail)?;
        }
        Ok(())
    }

    /// Settles `d` under its newest attempt (a reconnection may have handed it out again).
    async fn settle(&self, d: &InboxDelivery, how: Settlement) -> Result<(), FlowError> {
        let attempt = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&d.message_id)
            .copied()
            .unwrap_or(d.attempt);
        self.remote
            .settle(
                &d.inbox,
                self.agent.name(),
                &d.message_id,
                Some(attempt),
                &how,
            )
            .await
    }
}

fn count(
    report: &mut WorkerReport,
    done: Result<Result<Outcome, FlowError>, tokio::task::JoinError>,
) {
    match done {
        Ok(Ok(Outcome::Acked)) => report.acked += 1,
        Ok(Ok(Outcome::Retried)) => report.retried += 1,
        Ok(Ok(Outcome::Escalated)) => {
            report.escalated += 1;
            report.acked += 1;
        }
        Ok(Ok(Outcome::DeadLettered)) => report.dead_lettered += 1,
        // Not settled (the server refused or was unreachable): the lease runs out and the
        // delivery comes back.
        Ok(Err(e)) => tracing::warn!(error = %e, "a delivery was not settled"),
        Err(e) => tracing::warn!(error = %e, "a handler stopped"),
    }
}

/// Publishes what a delivery's handler makes, as its sender, in the delivery's task.
struct Publisher<'a> {
    remote: &'a Remote,
    task_id: &'a str,
    sent: Option<&'a SentNotice>,
}

#[async_trait]
impl Outbox for Publisher<'_> {
    async fn send(&mut self, item: Item) -> Result<(), FlowError> {
        let item = in_task(item, self.task_id);
        let sender = item.sender().unwrap_or_default().to_owned();
        self.remote.publish(&sender, &item.to_json()).await?;
        if let Some(notice) = self.sent {
            notice(&item);
        }
        Ok(())
    }
}

/// Stops the inbox reader when the connection is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
