//! The rule agent: deterministic steps that match what arrives and reply, call a tool, or hand
//! off with a packet built from a template.

use async_trait::async_trait;
use chorus_bus::AgentError;
use chorus_core::handoff::Instructions;
use chorus_core::{HandoffType, Message, Priority, Role, ToolCall, ToolOutcome};
use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::packet::{PacketDraft, new_message_id};
use super::scope::{Scope, fill};
use super::{FlowAgent, Item};
use crate::tools::ToolRegistry;

/// One rule: conditions on what arrived, and the actions to take, in order.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// `message` for plain messages, or a handoff type such as `ESCALATION`; any when absent.
    #[serde(default)]
    pub on: Option<String>,
    /// The sender must be this agent (or person).
    #[serde(default)]
    pub from: Option<String>,
    /// The text must contain this (case-insensitive).
    #[serde(default)]
    pub contains: Option<String>,
    /// Scope paths (e.g. `input.payload.data.issue_category`) and the values they must equal.
    #[serde(default)]
    pub fields: IndexMap<String, Value>,
    /// What to do.
    #[serde(default)]
    pub then: Vec<Action>,
}

/// One step of a rule.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
#[allow(clippy::large_enum_variant)] // read once from the flow file; boxing buys nothing
pub enum Action {
    /// Sends a text message.
    Reply {
        /// Recipient (a template); the sender when absent.
        #[serde(default)]
        to: Option<String>,
        /// The text (a template).
        text: String,
    },
    /// Calls a tool; its result is available as `${tools.<name>}` to later actions.
    Tool {
        /// The tool's name.
        tool: String,
        /// Arguments (templates).
        #[serde(default)]
        arguments: Map<String, Value>,
    },
    /// Sends a handoff built from templates and validated before it leaves.
    Handoff {
        /// Recipient (a template); the sender when absent (replies such as STATUS_UPDATE).
        #[serde(default)]
        to: Option<String>,
        /// The handoff type.
        handoff_type: String,
        /// How urgent (MEDIUM when absent).
        #[serde(default)]
        priority: Option<Priority>,
        /// `context.workflow_state`.
        #[serde(default)]
        workflow_state: Option<String>,
        /// `context.historical_data_summary` (a template).
        #[serde(default)]
        summary: Option<String>,
        /// `context.previous_actions`: action type → details (templates).
        #[serde(default)]
        previous_actions: IndexMap<String, String>,
        /// `payload.data` (templates).
        #[serde(default)]
        data: Map<String, Value>,
        /// `instructions` (templates).
        #[serde(default)]
        instructions: Option<Value>,
    },
}

/// An agent that follows rules: the first rule that matches decides.
pub struct RuleAgent {
    name: String,
    rules: Vec<Rule>,
    tools: ToolRegistry,
}

impl RuleAgent {
    /// An agent named `name` with `rules`, calling tools from `tools`.
    pub fn new(name: impl Into<String>, rules: Vec<Rule>, tools: ToolRegistry) -> Self {
        RuleAgent {
            name: name.into(),
            rules,
            tools,
        }
    }

    fn matches(rule: &Rule, input: &Item, scope: &Scope) -> bool {
        let kind_ok = match (&rule.on, input.handoff_type()) {
            (None, _) => true,
            (Some(on), None) => on == "message",
            (Some(on), Some(t)) => on == t,
        };
        let from_ok = rule
            .from
            .as_deref()
            .is_none_or(|f| input.sender() == Some(f));
        let text_ok = rule.contains.as_deref().is_none_or(|needle| {
            let text = match input {
                Item::Message(m) => m.text(),
                Item::Handoff(_) => input.to_json().to_string(),
            };
            text.to_lowercase().contains(&needle.to_lowercase())
        });
        let fields_ok = rule
            .fields
            .iter()
            .all(|(path, expected)| scope.get(path) == Some(expected));
        kind_ok && from_ok && text_ok && fields_ok
    }

    fn fail(&self, message: impl Into<String>) -> AgentError {
        AgentError::new(&self.name, message)
    }

    fn text(&self, template: &str, scope: &Scope) -> Result<String, AgentError> {
        match fill(&Value::String(template.to_owned()), scope).map_err(|e| self.fail(e))? {
            Value::String(s) => Ok(s),
            other => Ok(other.to_string()),
        }
    }

    fn recipient(
        &self,
        to: Option<&str>,
        input: &Item,
        scope: &Scope,
    ) -> Result<String, AgentError> {
        match to {
            Some(to) => self.text(to, scope),
            None => input
                .sender()
                .map(str::to_owned)
                .ok_or_else(|| self.fail("the reply has no recipient: the input names no sender")),
        }
    }

    async fn run(
        &self,
        action: &Action,
        input: &Item,
        task_id: &str,
        scope: &mut Scope,
    ) -> Result<Option<Item>, AgentError> {
        match action {
            Action::Reply { to, text } => {
                let mut message = Message::new(Role::Assistant, self.text(text, scope)?);
                message.id = Some(new_message_id());
                message.name = Some(self.name.clone());
                message.recipient = Some(self.recipient(to.as_deref(), input, scope)?);
                Ok(Some(Item::Message(message)))
            }
            Action::Tool { tool, arguments } => {
                let arguments =
                    fill(&Value::Object(arguments.clone()), scope).map_err(|e| self.fail(e))?;
                // The same call in the same task gets the same id, so an approval given for it
                // (in a persistent confirmation store) is found again when the flow is re-run.
                let key = format!("{}\u{0}{task_id}\u{0}{tool}\u{0}{arguments}", self.name);
                let id = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, key.as_bytes());
                let call = ToolCall::function(format!("call_{}", id.simple()), tool, &arguments);
                // Journaled under the input too: the same call for another input runs again.
                let input_id = input.journal_id();
                let output = self
                    .tools
                    .invoke_for_input(&self.name, &call, task_id, &input_id)
                    .await;
                let result = match output.outcome {
                    ToolOutcome::Success(value) => value,
                    ToolOutcome::Text(text) => Value::String(text),
                    ToolOutcome::Error {
                        error_type,
                        message,
                    } => {
                        return Err(
                            self.fail(format!("tool `{tool}` failed: {error_type}: {message}"))
                        );
                    }
                    ToolOutcome::Halted { reason, message } => {
                        return Err(
                            self.fail(format!("tool `{tool}` halted ({reason}): {message}"))
                        );
                    }
                };
                scope.set_tool_result(tool, result);
                Ok(None)
            }
            Action::Handoff {
                to,
                handoff_type,
                priority,
                workflow_state,
                summary,
                previous_actions,
                data,
                instructions,
            } => {
                let recipient = self.recipient(to.as_deref(), input, scope)?;
                let data =
                    match fill(&Value::Object(data.clone()), scope).map_err(|e| self.fail(e))? {
                        Value::Object(map) => map,
                        _ => Map::new(),
                    };
                let mut draft = PacketDraft::new(
                    &self.name,
                    recipient,
                    HandoffType::parse(handoff_type),
                    data,
                    task_id,
                );
                draft.correlation_id = match input {
                    Item::Handoff(h) => h.metadata.correlation_id.clone(),
                    Item::Message(_) => None,
                }
                .or_else(|| Some(task_id.to_owned()));
                draft.priority = priority.unwrap_or(Priority::Medium);
                if let Some(state) = workflow_state {
                    draft.workflow_state = state.clone();
                }
                draft.summary = summary
                    .as_deref()
                    .map(|s| self.text(s, scope))
                    .transpose()?;
                for (kind, details) in previous_actions {
                    draft
                        .previous_actions
                        .push((kind.clone(), self.text(details, scope)?));
                }
                if let Item::Handoff(earlier) = input {
                    draft.continuing(earlier);
                }
                if let Some(template) = instructions {
                    let filled = fill(template, scope).map_err(|e| self.fail(e))?;
                    draft.instructions =
                        serde_json::from_value::<Instructions>(filled).map_err(|e| {
                            self.fail(format!("instructions of the {handoff_type} handoff: {e}"))
                        })?;
                }
                let packet = draft.build().map_err(|e| self.fail(e.to_string()))?;
                Ok(Some(Item::Handoff(packet)))
            }
        }
    }
}

#[async_trait]
impl FlowAgent for RuleAgent {
    fn name(&self) -> &str {
        &self.name
    }

    async fn handle(&self, input: &Item, task_id: &str) -> Result<Vec<Item>, AgentError> {
        let mut scope = Scope::new(&self.name, input, task_id);
        let Some(rule) = self.rules.iter().find(|r| Self::matches(r, input, &scope)) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for action in &rule.then {
            if let Some(item) = self.run(action, input, task_id, &mut scope).await? {
                out.push(item);
            }
        }
        Ok(out)
    }
}
