//! Running a flow: choreography over the embedded bus, or a pipeline or hub in process.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chorus_bus::hub::Hub;
use chorus_bus::pipeline::{AgentRef, fan_out, sequential};
use chorus_bus::{Bus, BusConfig, BusError, DeadReason, MemoryBus};
use chorus_core::{Message, Role};
use indexmap::IndexMap;

use super::approval::{ApprovalWait, Delivery, Outbox, pending};
use super::build::{ModelFactory, build_journaled_agents};
use super::error::FlowError;
use super::failure::handle_with_strategy;
use super::lease::with_lease;
use super::outputs::{self, Recorded, in_task, once};
use super::remote::{InboxDelivery, Remote, Settlement};
use super::spec::{FlowSpec, Mode, SpecError};
use crate::agents::{BusAgent, FlowAgent, Item, new_message_id};
use crate::confirm::{Confirmation, Confirmations};
use crate::cost::UsageTotals;
use crate::journal::Journal;

/// How often a resumed run looks again for deliveries a stopped run held.
const HELD_POLL: Duration = Duration::from_millis(200);

/// A flow ready to run.
pub struct Flow {
    pub(super) spec: FlowSpec,
    pub(super) agents: IndexMap<String, Arc<dyn FlowAgent>>,
    pub(super) confirmations: Arc<dyn Confirmations>,
    task_id: String,
    pub(super) approval: Option<ApprovalWait>,
    journal: Option<Arc<dyn Journal>>,
}

/// How a flow ended normally. A flow run is one task, so its totals are the task's.
#[derive(Debug, Clone, Default)]
pub struct FlowReport {
    /// Deliveries handled.
    pub steps: usize,
    /// Items addressed to someone outside the flow (the person who started it).
    pub outputs: Vec<Item>,
    /// Model usage of the whole run (the task): the sum of `per_agent`.
    pub usage: UsageTotals,
    /// Model usage by agent name, one entry per agent of the flow.
    pub per_agent: BTreeMap<String, UsageTotals>,
    /// Tool calls of this flow's task still waiting for a person.
    pub pending_confirmations: Vec<Confirmation>,
}

impl Flow {
    /// Builds the agents and tools of `spec`.
    pub fn new(
        spec: FlowSpec,
        models: Option<&ModelFactory>,
        confirmations: Arc<dyn Confirmations>,
    ) -> Result<Flow, FlowError> {
        Self::journaled(spec, models, confirmations, None)
    }

    /// Builds the agents and tools of `spec`, keeping their work in `journal` when one is
    /// given (see [`crate::journal`]).
    pub fn journaled(
        spec: FlowSpec,
        models: Option<&ModelFactory>,
        confirmations: Arc<dyn Confirmations>,
        journal: Option<Arc<dyn Journal>>,
    ) -> Result<Flow, FlowError> {
        let agents = build_journaled_agents(&spec, models, confirmations.clone(), journal.clone())?;
        let task_id = spec
            .task_id
            .clone()
            .unwrap_or_else(|| format!("task-{}", new_message_id()));
        Ok(Flow {
            spec,
            agents,
            confirmations,
            task_id,
            approval: None,
            journal,
        })
    }

    /// The same flow working on task `task_id` (a resumed run's).
    pub fn with_task_id(mut self, task_id: impl Into<String>) -> Flow {
        self.task_id = task_id.into();
        self
    }

    /// The same flow waiting for a person's decision whenever an agent halts on a confirmation
    /// (`handoffs` flows, embedded or against a server), then re-delivering to that agent.
    pub fn await_approval(mut self, wait: ApprovalWait) -> Flow {
        self.approval = Some(wait);
        self
    }

    /// Handles one delivery, publishing what the agent makes on `channel` as soon as it is
    /// made; waits for approvals when configured.
    async fn deliver(
        &self,
        agent: &dyn FlowAgent,
        input: &Item,
        channel: Channel<'_>,
        report: &mut FlowReport,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) -> Result<(), FlowError> {
        let out = &mut FlowOutbox {
            flow: self,
            channel,
            report,
            observe,
        };
        if let Some(wait) = &self.approval {
            let delivery = Delivery {
                agent,
                input,
                task_id: &self.task_id,
                person: &self.spec.input.from,
                store: self.confirmations.as_ref(),
                once: false,
            };
            return wait.handle(delivery, out).await;
        }
        let handle = || handle_with_strategy(agent, input, &self.task_id);
        let items = match &self.journal {
            Some(journal) => {
                once(journal.as_ref(), agent.name(), input, &self.task_id, handle).await
            }
            None => handle().await,
        }
        .map_err(|e| FlowError::Failed(e.to_string()))?;
        for item in items {
            out.send(item).await?;
        }
        Ok(())
    }

    /// The task id every handoff of this run carries.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The flow's first message (`[input]`), with a new id each time.
    pub fn first_message(&self) -> Message {
        let input = &self.spec.input;
        let mut msg = Message::new(Role::User, input.text.clone());
        msg.id = Some(new_message_id());
        msg.name = Some(input.from.clone());
        msg.recipient = Some(
            input
                .to
                .clone()
                .unwrap_or_else(|| self.agents.keys().next().cloned().unwrap_or_default()),
        );
        msg
    }

    fn ordered(&self) -> Vec<Arc<dyn FlowAgent>> {
        if self.spec.order.is_empty() {
            self.agents.values().cloned().collect()
        } else {
            self.spec
                .order
                .iter()
                .filter_map(|n| self.agents.get(n).cloned())
                .collect()
        }
    }

    /// Runs the flow; `observe` sees every message and handoff sent, in order, the first
    /// message included.
    pub async fn run(
        &self,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) -> Result<FlowReport, FlowError> {
        let first = self.first_message();
        let report = match self.spec.mode {
            Mode::Handoffs => {
                let bus = MemoryBus::new(BusConfig::default());
                self.run_handoffs(&bus, Some(first), false, observe).await?
            }
            _ => self.run_in_process(first, observe).await?,
        };
        self.finish(report).await
    }

    /// Runs a `handoffs` flow on `bus`, a durable store the flow's agents journal their work in
    /// too (see [`Flow::journaled`]), starting with `first` (see [`Flow::first_message`]). To
    /// go on with a run that stopped on that store, give its task id ([`Flow::with_task_id`])
    /// and its first message: what the bus holds already is stored once, deliveries the run
    /// held come back when their leases run out, and what its agents recorded is not done
    /// again, so items it sent are sent (and observed) again with the same ids.
    pub async fn run_stored(
        &self,
        bus: &dyn Bus,
        first: Message,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) -> Result<FlowReport, FlowError> {
        if self.spec.mode != Mode::Handoffs {
            return Err(FlowError::Spec(SpecError {
                location: "mode".into(),
                message: "only mode = \"handoffs\" flows run on a store".into(),
            }));
        }
        let report = self.run_handoffs(bus, Some(first), true, observe).await?;
        self.finish(report).await
    }

    /// Runs a `handoffs` flow against the chorus server at `base` (e.g. `http://127.0.0.1:7700`)
    /// instead of the embedded bus: each item is published with its sender's token from the
    /// flow's `[server]` table, each agent reads its inbox as Server-Sent Events and acks what it
    /// handled; the flow ends when no delivery arrives for `server.idle_ms`.
    pub async fn run_remote(
        &self,
        base: &str,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) -> Result<FlowReport, FlowError> {
        if self.spec.mode != Mode::Handoffs {
            return Err(FlowError::Spec(SpecError {
                location: "mode".into(),
                message: "only mode = \"handoffs\" flows run against a server".into(),
            }));
        }
        let remote = Remote::new(base, &self.spec.server).map_err(|message| SpecError {
            location: "server.tokens".into(),
            message,
        })?;
        let names: Vec<String> = self.agents.keys().cloned().collect();
        let (mut rx, tasks) = remote.listen(&names)?;
        let _readers = AbortOnDrop(tasks);
        let mut report = FlowReport::default();
        let channel = Channel::Remote(&remote);
        self.send(
            channel,
            Item::Message(self.first_message()),
            &mut report,
            observe,
        )
        .await?;
        let mut handled = std::collections::HashSet::new();
        while let Ok(Some(next)) = tokio::time::timeout(remote.idle(), rx.recv()).await {
            let InboxDelivery {
                inbox: name,
                message_id,
                message: document,
                ..
            } = next?;
            // A redelivery (the lease ran out while this run waited) of what this run handled.
            if !handled.insert(message_id.clone()) {
                continue;
            }
            self.count_step(&mut report)?;
            let Some(agent) = self.agents.get(&name) else {
                continue;
            };
            let input = Item::from_json(&document).map_err(FlowError::Failed)?;
            // The lease lasts while the agent works: a model call or a wait for a person may
            // outlast the hub's ack wait.
            let extend = || async {
                let renew = Settlement::InProgress;
                if let Err(e) = remote.settle(&name, &name, &message_id, None, &renew).await {
                    tracing::warn!(%message_id, error = %e, "the lease was not extended");
                }
            };
            let delivered = with_lease(
                self.deliver(agent.as_ref(), &input, channel, &mut report, observe),
                remote.renew_every(),
                extend,
            )
            .await;
            if let Err(e) = delivered {
                // The flow ends here (the strategy's retries are spent): the delivery becomes a
                // dead letter, to be seen and replayed, rather than acked as if it were done.
                let gave_up = Settlement::DeadLetter(e.to_string());
                remote
                    .settle(&name, &name, &message_id, None, &gave_up)
                    .await?;
                return Err(e);
            }
            remote.ack(&name, &message_id).await?;
        }
        self.finish(report).await
    }

    /// Counts one delivery; fails once the flow has used up `max_steps`.
    fn count_step(&self, report: &mut FlowReport) -> Result<(), FlowError> {
        report.steps += 1;
        let max_steps = self.spec.max_steps.unwrap_or(100);
        if report.steps > max_steps {
            return Err(FlowError::Failed(format!(
                "the flow did not end within max_steps = {max_steps} deliveries"
            )));
        }
        Ok(())
    }

    /// Shows `item` to `observe`, publishes it on `channel`, and keeps it as an output when it
    /// is addressed to no agent of the flow.
    async fn send(
        &self,
        channel: Channel<'_>,
        item: Item,
        report: &mut FlowReport,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) -> Result<(), FlowError> {
        let item = self.in_task(item);
        observe(&item);
        match channel {
            Channel::Bus(bus) => publish_on_bus(bus, &item).await?,
            Channel::Remote(remote) => {
                let sender = item.sender().unwrap_or_default().to_owned();
                remote.publish(&sender, &item.to_json()).await?;
            }
        }
        self.keep_output(item, report);
        Ok(())
    }

    /// Shows `item`, stored already, to `observe`, and keeps it as an output as [`Flow::send`]
    /// does.
    fn sent_already(
        &self,
        item: Item,
        report: &mut FlowReport,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) {
        let item = self.in_task(item);
        observe(&item);
        self.keep_output(item, report);
    }

    /// Keeps `item` as an output when it is addressed to someone outside the flow.
    fn keep_output(&self, item: Item, report: &mut FlowReport) {
        if !item
            .recipients()
            .iter()
            .any(|r| self.agents.contains_key(r))
        {
            report.outputs.push(item);
        }
    }

    /// `item` with the run's task id as `metadata.task_id` when it is a message without one:
    /// a server then files the person's messages and the agents' replies under the task, beside
    /// its handoffs.
    fn in_task(&self, item: Item) -> Item {
        in_task(item, &self.task_id)
    }

    /// Adds usage and pending confirmations to a finished run's report.
    async fn finish(&self, mut report: FlowReport) -> Result<FlowReport, FlowError> {
        for (name, agent) in &self.agents {
            let totals = agent.usage();
            report.usage.merge(&totals);
            report.per_agent.insert(name.clone(), totals);
        }
        report.pending_confirmations = pending(self.confirmations.as_ref(), &self.task_id).await?;
        Ok(report)
    }

    /// Runs a `handoffs` flow on `bus`. `in_store` when `bus` is the run's durable store: a
    /// delivery's outputs are then recorded, stored and acked in one commit there
    /// ([`outputs::commit`]; not while approvals are awaited, whose outputs go out as they come).
    async fn run_handoffs(
        &self,
        bus: &dyn Bus,
        first: Option<Message>,
        in_store: bool,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) -> Result<FlowReport, FlowError> {
        let failed = |e: BusError| FlowError::Failed(e.to_string());
        let mut report = FlowReport::default();
        let channel = Channel::Bus(bus);
        if let Some(first) = first {
            self.send(channel, Item::Message(first), &mut report, observe)
                .await?;
        }
        loop {
            let mut idle = true;
            for (name, agent) in &self.agents {
                let deliveries = bus.receive(name, 1, Duration::ZERO).await.map_err(failed)?;
                for delivery in deliveries {
                    idle = false;
                    self.count_step(&mut report)?;
                    // A delivery that cannot be handled becomes a dead letter (to be seen and
                    // replayed), as against a server: left held in a stored run, it would fail
                    // every --resume and refuse every new run on the store.
                    // One waiting for a person (its agent halted on a confirmation) stays held:
                    // after the approval, --resume hands it to the agent again.
                    let give_up = |e: FlowError| async {
                        match pending(self.confirmations.as_ref(), &self.task_id).await {
                            Ok(waiting) if !waiting.is_empty() => return e,
                            _ => {}
                        }
                        let reason = DeadReason::Failed {
                            attempts: delivery.attempt,
                            error: e.to_string(),
                        };
                        match bus.dead_letter(&delivery, reason).await {
                            Ok(()) => e,
                            Err(dead) => FlowError::Failed(format!(
                                "{e} (and it was not kept as a dead letter: {dead})"
                            )),
                        }
                    };
                    let input =
                        match serde_json::from_slice::<serde_json::Value>(&delivery.envelope.bytes)
                            .map_err(|e| format!("unreadable delivery: {e}"))
                            .and_then(|document| Item::from_json(&document))
                        {
                            Ok(input) => input,
                            Err(e) => return Err(give_up(FlowError::Failed(e)).await),
                        };
                    // The lease lasts while the agent works (a model call may outlast it).
                    let extend = || async {
                        if let Err(e) = bus.in_progress(&delivery).await {
                            tracing::warn!(error = %e, "the lease was not extended");
                        }
                    };
                    let renew = bus.config().ack_wait_for(name) / 3;
                    let task_id = &self.task_id;
                    if in_store && self.approval.is_none() {
                        let items =
                            match outputs::recorded(bus, agent.name(), &input, task_id).await? {
                                // Stored with the record: only the ack may be missing.
                                Some(Recorded {
                                    items,
                                    stored: true,
                                }) => {
                                    bus.ack(&delivery).await.map_err(failed)?;
                                    items
                                }
                                // Recorded by a run that sent its outputs itself.
                                Some(Recorded { items, .. }) => {
                                    for item in items {
                                        self.send(channel, item, &mut report, observe).await?;
                                    }
                                    bus.ack(&delivery).await.map_err(failed)?;
                                    continue;
                                }
                                None => {
                                    let handled = with_lease(
                                        handle_with_strategy(agent.as_ref(), &input, task_id),
                                        renew,
                                        extend,
                                    )
                                    .await;
                                    let items = match handled {
                                        Ok(items) => items,
                                        Err(e) => {
                                            let e = FlowError::Failed(e.to_string());
                                            return Err(give_up(e).await);
                                        }
                                    };
                                    let committed = outputs::commit(
                                        bus,
                                        &delivery,
                                        agent.name(),
                                        &input,
                                        task_id,
                                        items,
                                    );
                                    match committed.await {
                                        Ok(items) => items,
                                        // An output the bus refuses fails the delivery, as a
                                        // publish's refusal does.
                                        Err(e) => return Err(give_up(e).await),
                                    }
                                }
                            };
                        for item in items {
                            self.sent_already(item, &mut report, observe);
                        }
                        continue;
                    }
                    let delivered = with_lease(
                        self.deliver(agent.as_ref(), &input, channel, &mut report, observe),
                        renew,
                        extend,
                    )
                    .await;
                    if let Err(e) = delivered {
                        return Err(give_up(e).await);
                    }
                    bus.ack(&delivery).await.map_err(failed)?;
                }
            }
            if !idle {
                continue;
            }
            // Nothing visible: done, unless a stopped run still holds deliveries (they come
            // back when their leases run out).
            let mut held = 0;
            for name in self.agents.keys() {
                held += bus.depth(name).await.map_err(failed)?;
            }
            if held == 0 {
                return Ok(report);
            }
            tokio::time::sleep(HELD_POLL).await;
        }
    }

    async fn run_in_process(
        &self,
        first: Message,
        observe: &mut (dyn FnMut(&Item) + Send),
    ) -> Result<FlowReport, FlowError> {
        let adapters: Vec<Arc<BusAgent>> = self
            .ordered()
            .into_iter()
            .map(|a| Arc::new(BusAgent::new(a, self.task_id.clone())))
            .collect();
        let refs: Vec<AgentRef<Message>> = adapters
            .iter()
            .map(|a| a.clone() as AgentRef<Message>)
            .collect();
        let mut report = FlowReport::default();
        observe(&Item::Message(first.clone()));
        let fail = |e: chorus_bus::AgentError| FlowError::Failed(e.to_string());
        let drain = |report: &mut FlowReport, observe: &mut (dyn FnMut(&Item) + Send)| {
            for a in &adapters {
                for item in a.take_sent() {
                    report.steps += 1;
                    observe(&item);
                }
            }
        };
        let result = match self.spec.mode {
            Mode::Sequential => sequential(&refs, first).await.map(|m| vec![m]),
            Mode::FanOut => fan_out(&refs, &first, false).await,
            _ => {
                let hub = Hub::enter(&self.spec.name, refs.clone(), Some(first.clone())).await;
                let mut last = first;
                for _ in 0..self.spec.rounds.unwrap_or(1) {
                    for agent in &refs {
                        match hub.speak(agent.name(), last.clone()).await {
                            Ok(reply) => last = reply,
                            Err(e) => {
                                drain(&mut report, observe);
                                return Err(fail(e));
                            }
                        }
                    }
                }
                Ok(vec![last])
            }
        };
        drain(&mut report, observe);
        let replies = result.map_err(fail)?;
        report.outputs = replies.into_iter().map(Item::Message).collect();
        Ok(report)
    }
}

/// Where a `handoffs` flow publishes: the embedded bus or the chorus server.
#[derive(Clone, Copy)]
enum Channel<'a> {
    Bus(&'a dyn Bus),
    Remote(&'a Remote),
}

/// Publishes an item on the embedded bus (an item it already holds, sent by a run that stopped,
/// is a duplicate and stored once); a refusal names the item and the bus's issues.
async fn publish_on_bus(bus: &dyn Bus, item: &Item) -> Result<(), FlowError> {
    let bytes =
        serde_json::to_vec(&item.to_json()).map_err(|e| FlowError::Failed(e.to_string()))?;
    bus.publish(bytes)
        .await
        .map(drop)
        .map_err(|e| outputs::refused(item, e))
}

/// Publishes a delivery's items on the flow's channel.
struct FlowOutbox<'a> {
    flow: &'a Flow,
    channel: Channel<'a>,
    report: &'a mut FlowReport,
    observe: &'a mut (dyn FnMut(&Item) + Send),
}

#[async_trait::async_trait]
impl Outbox for FlowOutbox<'_> {
    async fn send(&mut self, item: Item) -> Result<(), FlowError> {
        self.flow
            .send(self.channel, item, self.report, self.observe)
            .await
    }
}

/// Stops the inbox readers when the run ends.
struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}
