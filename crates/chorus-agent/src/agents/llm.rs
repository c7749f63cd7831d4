//! The LLM agent: a personality, a model, tools and handoffs offered as tools, run in a
//! tool-call loop with a step limit under a context budget.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chorus_bus::AgentError;
use chorus_context::TokenCounter;
use chorus_context::data::assemble;
use chorus_context::trim::trim_chorus;
use chorus_core::channel;
use chorus_core::{ContentPart, DataPart, Message, Nullable, Role, ToolCall, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::packet::new_message_id;
use super::transfer::{REPLY_TOOL, TRANSFER_PREFIX, packet_from_call, reply_tool, transfer_tool};
use super::{FlowAgent, Item, key_digest};
use crate::confirm::ConfirmationState;
use crate::cost::UsageTotals;
use crate::journal::Book;
use crate::model::{ModelClient, ModelRequest};
use crate::tools::{ToolOutput, ToolRegistry};

/// How an LLM agent is set up.
#[derive(Debug, Clone)]
pub struct LlmAgentConfig {
    /// The agent's name.
    pub name: String,
    /// System prompt giving its personality (domain, cognitive style, decision preference,
    /// granularity).
    pub personality: String,
    /// The model name.
    pub model: String,
    /// Names of registry tools it may call.
    pub tools: Vec<String>,
    /// Agents it may hand off to (offered as `transfer_to_<agent>`).
    pub handoffs: Vec<String>,
    /// Token budget of each request; older turns are trimmed, calls kept with their results.
    pub context_budget: Option<usize>,
    /// Model calls per input at most.
    pub max_steps: usize,
    /// Whether analysis-channel text goes out with the reply.
    pub show_analysis: bool,
    /// Sampling temperature.
    pub temperature: Option<f64>,
}

impl LlmAgentConfig {
    /// A config with no tools, no handoffs, no budget and a step limit of 8.
    pub fn new(
        name: impl Into<String>,
        personality: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        LlmAgentConfig {
            name: name.into(),
            personality: personality.into(),
            model: model.into(),
            tools: Vec::new(),
            handoffs: Vec::new(),
            context_budget: None,
            max_steps: 8,
            show_analysis: false,
            temperature: None,
        }
    }
}

/// An agent driven by a language model.
pub struct LlmAgent {
    config: LlmAgentConfig,
    client: Arc<dyn ModelClient>,
    tools: ToolRegistry,
    counter: TokenCounter,
    histories: Mutex<HashMap<String, Vec<Message>>>,
    origins: Mutex<HashMap<String, Item>>,
    refusals_told: Mutex<HashSet<String>>,
    usage: Mutex<UsageTotals>,
}

/// The key prefix of an LLM agent's conversation steps in its journal.
const STEP_PREFIX: &str = "step-";

/// The journal key prefix of a model reply with tool calls, recorded before any of them runs.
const REPLY_PREFIX: &str = "reply-";

/// One recorded step of an LLM agent's work on a task: the conversation after it, and the
/// outputs when it ended the input.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SavedStep {
    /// The input being handled (its message id).
    input: String,
    /// Model calls made for that input so far.
    step: usize,
    /// The messages the conversation gained since the step before (the whole conversation is
    /// all steps' messages in order).
    added: Vec<Message>,
    /// What first brought the task to this agent (JSON).
    origin: Option<Value>,
    /// Rejected confirmations already told to the model.
    refusals_told: Vec<String>,
    /// The task's model usage so far.
    usage: UsageTotals,
    /// The outputs, when the step ended the input.
    outputs: Option<Vec<Value>>,
}

/// What the journal holds of a task for this agent.
#[derive(Default)]
struct Saved {
    /// Steps recorded.
    count: usize,
    /// The last of them.
    last: Option<SavedStep>,
    /// The conversation they make up.
    history: Vec<Message>,
    /// The task's model usage so far.
    usage: UsageTotals,
}

/// What one step of the loop decided.
enum Step {
    Continue,
    Done(Vec<Item>),
}

impl LlmAgent {
    /// An agent with `config`, calling `client`, with tools from `tools`.
    pub fn new(
        config: LlmAgentConfig,
        client: Arc<dyn ModelClient>,
        tools: ToolRegistry,
    ) -> Result<Self, String> {
        let counter = TokenCounter::for_model(&config.model)
            .or_else(|_| TokenCounter::for_model("approximate"))
            .map_err(|e| e.to_string())?;
        Ok(LlmAgent {
            config,
            client,
            tools,
            counter,
            histories: Mutex::new(HashMap::new()),
            origins: Mutex::new(HashMap::new()),
            refusals_told: Mutex::new(HashSet::new()),
            usage: Mutex::new(UsageTotals::default()),
        })
    }

    /// The conversation this agent keeps for `task_id` (its own analysis included).
    pub fn history(&self, task_id: &str) -> Vec<Message> {
        self.histories
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(task_id)
            .cloned()
            .unwrap_or_default()
    }

    fn fail(&self, message: impl Into<String>) -> AgentError {
        AgentError::new(&self.config.name, message)
    }

    fn system_prompt(&self) -> String {
        let mut prompt = self.config.personality.trim().to_owned();
        if !self.config.handoffs.is_empty() {
            prompt.push_str(&format!(
                "\n\nYou may hand the task to: {}. Use the transfer_to_<agent> tools with a short summary; \
                 never put your private reasoning into a handoff.",
                self.config.handoffs.join(", ")
            ));
        }
        prompt
    }

    fn definitions(&self, input: &Item) -> Vec<ToolDefinition> {
        let mut defs = self.tools.definitions(Some(&self.config.tools));
        defs.extend(self.config.handoffs.iter().map(|a| transfer_tool(a)));
        if let (Item::Handoff(_), Some(sender)) = (input, input.sender()) {
            defs.push(reply_tool(sender));
        }
        defs
    }

    /// What the model sees of the input: text, and a handoff as a data part.
    fn input_message(input: &Item) -> Message {
        match input {
            Item::Message(m) => {
                let mut msg = Message::with_parts(Role::User, m.parts());
                msg.name = m.name.clone();
                msg
            }
            Item::Handoff(h) => {
                let sender = &h.metadata.sender_id;
                let intro = format!(
                    "{} handoff from {sender}. {}",
                    h.payload.handoff_type,
                    h.instructions
                        .next_steps_suggestion
                        .as_deref()
                        .unwrap_or("")
                );
                let data = DataPart {
                    kind: Some("handoff".into()),
                    data: serde_json::to_value(h).unwrap_or(Value::Null),
                    schema: None,
                    description: Some(format!(
                        "The {} packet {sender} sent you.",
                        h.payload.handoff_type
                    )),
                    instance: Some(json!(h.metadata.message_id)),
                    extra: Default::default(),
                };
                let mut msg = Message::with_parts(
                    Role::User,
                    vec![ContentPart::text(intro.trim_end()), ContentPart::Data(data)],
                );
                msg.name = Some(sender.clone());
                msg
            }
        }
    }

    /// Runs the calls of approved confirmations of this agent and task (the exact halted calls),
    /// and gives the model the refusal result of rejected ones (once each).
    async fn resume_approved(
        &self,
        task_id: &str,
        history: &mut Vec<Message>,
    ) -> Result<(), AgentError> {
        let Some(store) = self.tools.confirmations() else {
            return Ok(());
        };
        let decided = store
            .list(None)
            .await
            .map_err(|e| self.fail(e.to_string()))?;
        for c in decided.into_iter().filter(|c| {
            c.agent == self.config.name
                && c.task_id.as_deref() == Some(task_id)
                && match c.state {
                    ConfirmationState::Approved => true,
                    ConfirmationState::Rejected => self
                        .refusals_told
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(c.id.clone()),
                    _ => false,
                }
        }) {
            let call = ToolCall::function(&c.call_id, &c.tool, &Value::Null);
            let call = ToolCall {
                function: chorus_core::FunctionCall {
                    arguments: c.arguments.clone(),
                    ..call.function
                },
                ..call
            };
            let output = self
                .tools
                .invoke(&self.config.name, &call, Some(task_id))
                .await;
            let mut assistant = Message::new(Role::Assistant, "");
            assistant.content = Nullable::Absent;
            assistant.tool_calls = Nullable::Value(vec![call.clone()]);
            history.push(assistant);
            history.push(output.to_message(&call.id, &call.function.name));
        }
        Ok(())
    }

    /// The steps this agent recorded for `task_id` in its tools' journal (none without one).
    async fn load(&self, task_id: &str) -> Result<Saved, AgentError> {
        let Some(journal) = self.tools.journal() else {
            return Ok(Saved::default());
        };
        let book = Book::new(&self.config.name, task_id);
        let records = journal
            .records(&book)
            .await
            .map_err(|e| self.fail(e.to_string()))?;
        let steps: Vec<Value> = records
            .into_iter()
            .filter(|(key, _)| key.starts_with(STEP_PREFIX))
            .map(|(_, record)| record)
            .collect();
        let count = steps.len();
        let mut history = Vec::new();
        let mut last = None;
        for record in steps {
            let step = serde_json::from_value::<SavedStep>(record)
                .map_err(|e| self.fail(format!("an unreadable recorded step: {e}")))?;
            history.extend(step.added.iter().cloned());
            last = Some(step);
        }
        let usage = last.as_ref().map(|l| l.usage).unwrap_or_default();
        Ok(Saved {
            count,
            last,
            history,
            usage,
        })
    }

    /// Records the conversation after a step of the input `input_id` (its outputs when it is
    /// the last); fails when another replica recorded this step first.
    async fn save(
        &self,
        task_id: &str,
        saved: &mut Saved,
        input_id: &str,
        step: usize,
        history: &[Message],
        outputs: Option<Vec<Value>>,
    ) -> Result<(), AgentError> {
        let Some(journal) = self.tools.journal() else {
            return Ok(());
        };
        let origin = self
            .origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(task_id)
            .map(Item::to_json);
        let refusals_told = self
            .refusals_told
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        // The conversation only grows: each step records the messages it added.
        let added = history
            .get(saved.history.len()..)
            .unwrap_or_default()
            .to_vec();
        let record = SavedStep {
            input: input_id.to_owned(),
            step,
            added,
            origin,
            refusals_told,
            usage: saved.usage,
            outputs,
        };
        let value = serde_json::to_value(&record).map_err(|e| self.fail(e.to_string()))?;
        let key = format!("{STEP_PREFIX}{:06}", saved.count + 1);
        let book = Book::new(&self.config.name, task_id);
        let fresh = journal
            .record(&book, &key, &value)
            .await
            .map_err(|e| self.fail(e.to_string()))?;
        if !fresh {
            return Err(self.fail(format!(
                "another replica of {} recorded step {} of task {task_id} first",
                self.config.name,
                saved.count + 1
            )));
        }
        saved.count += 1;
        saved.last = Some(record);
        saved.history = history.to_vec();
        Ok(())
    }

    /// Who a final answer goes to: the sender of the input, except that news (STATUS_UPDATE,
    /// NOTIFICATION) is passed on to whoever first brought the task to this agent; `None` when
    /// that is the news's own sender.
    fn answer_target(&self, input: &Item, task_id: &str) -> Option<Item> {
        let news = matches!(input.handoff_type(), Some("STATUS_UPDATE" | "NOTIFICATION"));
        if !news {
            return Some(input.clone());
        }
        let origin = self
            .origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(task_id)
            .cloned()?;
        (origin.sender() != input.sender()).then_some(origin)
    }

    /// What goes back for a final answer: a STATUS_UPDATE to the sender of a handoff, else a
    /// message on the final channel (with the analysis as reasoning parts when configured).
    fn reply_item(
        &self,
        input: &Item,
        task_id: &str,
        reply: &[Message],
    ) -> Result<Option<Item>, AgentError> {
        let Some(input) = self.answer_target(input, task_id) else {
            return Ok(None);
        };
        let input = &input;
        let sender = input.sender().unwrap_or("user").to_owned();
        let last = reply
            .iter()
            .rev()
            .find(|m| m.channel.as_deref() != Some(channel::ANALYSIS));
        let text = last.map(Message::text).unwrap_or_default();
        if let Item::Handoff(h) = input {
            let data = json!({
                "status": "COMPLETED",
                "summary": text,
                "in_response_to": h.metadata.message_id,
            });
            let Value::Object(data) = data else {
                return Err(self.fail("status data is not an object"));
            };
            let mut draft = super::PacketDraft::new(
                &self.config.name,
                sender,
                chorus_core::HandoffType::StatusUpdate,
                data,
                task_id,
            );
            draft.correlation_id = h.metadata.correlation_id.clone();
            draft.summary = Some(text);
            draft.carry_actions(h);
            return draft
                .build()
                .map(|p| Some(Item::Handoff(p)))
                .map_err(|e| self.fail(e.to_string()));
        }
        let mut parts = Vec::new();
        if self.config.show_analysis {
            parts.extend(reply.iter().flat_map(analysis_parts));
        }
        parts.push(ContentPart::text(text));
        let mut out = Message::with_parts(Role::Assistant, parts);
        out.id = Some(new_message_id());
        out.name = Some(self.config.name.clone());
        out.recipient = Some(sender);
        out.channel = Some(channel::FINAL.into());
        out.metadata = reply.last().and_then(|m| m.metadata.clone());
        Ok(Some(Item::Message(out)))
    }

    /// The model's reply for step `step` of input `input_id`. A reply with tool calls is
    /// recorded before any of them runs, and a retried step (after a crash, a stop or a
    /// redelivery) takes the recorded reply instead of asking the model again: the same calls
    /// under the same ids, which the tool journal knows, so that a call that finished is not
    /// run again and an unfinished `idempotent = false` call waits for a person. (A real model
    /// gives new call ids every time it is asked.)
    async fn reply(
        &self,
        request: &ModelRequest,
        task_id: &str,
        input_id: &str,
        step: usize,
    ) -> Result<Vec<Message>, AgentError> {
        let journal = self.tools.journal();
        let book = Book::new(&self.config.name, task_id);
        // A digest, so that the key stays short and of the journal's id alphabet.
        let key = format!("{REPLY_PREFIX}{step:06}-{}", key_digest(input_id));
        let recorded = |value: Value| {
            serde_json::from_value::<Vec<Message>>(value)
                .map_err(|e| self.fail(format!("an unreadable recorded reply: {e}")))
        };
        if let Some(journal) = journal
            && let Some(value) = journal
                .find(&book, &key)
                .await
                .map_err(|e| self.fail(e.to_string()))?
        {
            return recorded(value);
        }
        let reply = self
            .client
            .complete(request, None)
            .await
            .map_err(|e| self.fail(e.to_string()))?;
        let calls = reply.messages.iter().any(|m| !m.calls().is_empty());
        if let Some(journal) = journal.filter(|_| calls) {
            let value =
                serde_json::to_value(&reply.messages).map_err(|e| self.fail(e.to_string()))?;
            let fresh = journal
                .record(&book, &key, &value)
                .await
                .map_err(|e| self.fail(e.to_string()))?;
            if !fresh {
                // Another replica asked first: its calls are the ones that may have run.
                let first = journal
                    .find(&book, &key)
                    .await
                    .map_err(|e| self.fail(e.to_string()))?;
                return recorded(first.unwrap_or(value));
            }
        }
        Ok(reply.messages)
    }

    async fn step(
        &self,
        input: &Item,
        (task_id, input_id, step): (&str, &str, usize),
        history: &mut Vec<Message>,
        task_usage: &mut UsageTotals,
    ) -> Result<Step, AgentError> {
        let tools = self.definitions(input);
        let view = assemble(history);
        let messages = match self.config.context_budget {
            Some(budget) => {
                trim_chorus(&view, &tools, &self.counter, budget, None)
                    .map_err(|e| self.fail(format!("context budget of {budget} tokens: {e}")))?
                    .messages
            }
            None => view,
        };
        let request = ModelRequest {
            model: self.config.model.clone(),
            messages,
            tools,
            temperature: self.config.temperature,
            conversation_id: Some(task_id.to_owned()),
            ..ModelRequest::default()
        };
        let reply = self.reply(&request, task_id, input_id, step).await?;
        if let Some(last) = reply.last() {
            self.usage
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .add_reply(last);
            task_usage.add_reply(last);
        }
        history.extend(reply.iter().cloned());
        let calls: Vec<ToolCall> = reply.iter().flat_map(|m| m.calls().to_vec()).collect();
        if calls.is_empty() {
            if reply.iter().all(|m| m.text().trim().is_empty()) {
                return Err(self.fail("the model replied with no text and no tool call"));
            }
            let answer = self.reply_item(input, task_id, &reply)?;
            return Ok(Step::Done(answer.into_iter().collect()));
        }
        let mut handed_off = Vec::new();
        for call in calls {
            let name = call.function.name.as_str();
            let recipient = if name == REPLY_TOOL {
                input.sender().map(str::to_owned)
            } else {
                name.strip_prefix(TRANSFER_PREFIX)
                    .filter(|a| self.config.handoffs.iter().any(|h| h == a))
                    .map(str::to_owned)
            };
            let output = match recipient {
                Some(to) => {
                    let correlation = match input {
                        Item::Handoff(h) => h.metadata.correlation_id.clone(),
                        Item::Message(_) => Some(task_id.to_owned()),
                    };
                    match packet_from_call(
                        &self.config.name,
                        &to,
                        &call.function.arguments,
                        task_id,
                        correlation,
                        match input {
                            Item::Handoff(h) => Some(h),
                            Item::Message(_) => None,
                        },
                    ) {
                        Ok(packet) => {
                            let id = packet.metadata.message_id.clone();
                            handed_off.push(Item::Handoff(packet));
                            ToolOutput::success(
                                json!({"status": "success", "handed_off_to": to, "message_id": id}),
                            )
                        }
                        Err(message) => ToolOutput::error("InvalidHandoff", message),
                    }
                }
                None => {
                    self.tools
                        .invoke(&self.config.name, &call, Some(task_id))
                        .await
                }
            };
            history.push(output.to_message(&call.id, name));
        }
        if handed_off.is_empty() {
            Ok(Step::Continue)
        } else {
            Ok(Step::Done(handed_off))
        }
    }
}

#[async_trait]
impl FlowAgent for LlmAgent {
    fn name(&self) -> &str {
        &self.config.name
    }

    async fn handle(&self, input: &Item, task_id: &str) -> Result<Vec<Item>, AgentError> {
        let mut saved = self.load(task_id).await?;
        let input_id = input.journal_id();
        let resuming = saved
            .last
            .as_ref()
            .is_some_and(|last| last.input == input_id);
        if let Some(last) = saved.last.as_ref().filter(|_| resuming)
            && let Some(outputs) = &last.outputs
        {
            // This input was handled to the end before (a redelivery): the same outputs again.
            return outputs
                .iter()
                .map(|o| Item::from_json(o).map_err(|e| self.fail(e)))
                .collect();
        }
        let kept = match &saved.last {
            Some(_) => Some(saved.history.clone()),
            None => {
                let histories = self.histories.lock().unwrap_or_else(|e| e.into_inner());
                histories.get(task_id).cloned()
            }
        };
        let mut history =
            kept.unwrap_or_else(|| vec![Message::new(Role::System, self.system_prompt())]);
        if let Some(last) = &saved.last {
            let mut told = self.refusals_told.lock().unwrap_or_else(|e| e.into_inner());
            told.extend(last.refusals_told.iter().cloned());
            if let Some(origin) = last.origin.as_ref().and_then(|o| Item::from_json(o).ok()) {
                self.origins
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(task_id.to_owned())
                    .or_insert(origin);
            }
        }
        self.origins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(task_id.to_owned())
            .or_insert_with(|| input.clone());
        if !resuming {
            self.resume_approved(task_id, &mut history).await?;
            history.push(Self::input_message(input));
        }
        let mut result = Err(self.fail(format!(
            "no final answer within the step limit of {} model calls",
            self.config.max_steps
        )));
        let done_before = saved
            .last
            .as_ref()
            .filter(|_| resuming)
            .map_or(0, |l| l.step);
        for step in done_before..self.config.max_steps {
            let outcome = self
                .step(
                    input,
                    (task_id, &input_id, step + 1),
                    &mut history,
                    &mut saved.usage,
                )
                .await;
            let outputs = match &outcome {
                Ok(Step::Done(out)) => Some(out.iter().map(Item::to_json).collect()),
                _ => None,
            };
            if outcome.is_ok() {
                self.save(task_id, &mut saved, &input_id, step + 1, &history, outputs)
                    .await?;
            }
            match outcome {
                Ok(Step::Continue) => continue,
                Ok(Step::Done(out)) => {
                    result = Ok(out);
                    break;
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.histories
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(task_id.to_owned(), history);
        result
    }

    async fn observe(&self, item: &Item, task_id: &str) {
        let mut histories = self.histories.lock().unwrap_or_else(|e| e.into_inner());
        histories
            .entry(task_id.to_owned())
            .or_insert_with(|| vec![Message::new(Role::System, self.system_prompt())])
            .push(Self::input_message(item));
    }

    fn usage(&self) -> UsageTotals {
        *self.usage.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The reasoning of a reply message: its reasoning parts, or all its text on the analysis channel.
fn analysis_parts(message: &Message) -> Vec<ContentPart> {
    if message.channel.as_deref() == Some(channel::ANALYSIS) {
        return vec![ContentPart::Reasoning(chorus_core::ReasoningPart {
            text: message.text(),
            signature: None,
            extra: Default::default(),
        })];
    }
    message
        .parts()
        .into_iter()
        .filter(|p| matches!(p, ContentPart::Reasoning(_)))
        .collect()
}
