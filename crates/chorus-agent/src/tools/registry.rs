//! The tool registry: parses and validates arguments, asks for confirmation, runs the tool.

use std::collections::HashSet;
use std::sync::Arc;

use chorus_core::validate::json_type;
use chorus_core::{ToolCall, ToolDefinition, ToolOutcome};
use indexmap::IndexMap;
use serde_json::{Value, json};
use tracing::Instrument;

use super::{Tool, ToolOutput};
use crate::confirm::{ConfirmError, Confirmation, ConfirmationState, Confirmations};
use crate::journal::{Book, Journal};

/// The halted reason of a call that waits for a person (seed 000, exercise 2).
const CONFIRMATION_REQUIRED: &str = "human_confirmation_required";

struct Entry {
    tool: Arc<dyn Tool>,
    schema: Option<jsonschema::Validator>,
}

/// Tools by name, with their compiled parameter schemas and the confirmation store.
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: IndexMap<String, Arc<Entry>>,
    confirmations: Option<Arc<dyn Confirmations>>,
    journal: Option<Arc<dyn Journal>>,
    not_idempotent: HashSet<String>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("confirmations", &self.confirmations.is_some())
            .field("journal", &self.journal.is_some())
            .finish()
    }
}

/// A tool could not be registered.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The parameter schema does not compile.
    #[error("tool `{tool}`: expected a valid JSON Schema for its parameters: {reason}")]
    Schema {
        /// The tool.
        tool: String,
        /// The compiler's message.
        reason: String,
    },
    /// Two tools with one name.
    #[error("tool `{0}` is registered twice; tool names must be unique")]
    Duplicate(String),
    /// A tool requires confirmation but the registry has no store to record it in.
    #[error("tool `{0}` requires confirmation; give the registry a confirmation store first")]
    NoConfirmations(String),
}

/// The id of the confirmation for one exact call: the same agent, tool, call id and argument
/// string always give the same id.
pub fn confirmation_id(agent: &str, tool: &str, call_id: &str, arguments: &str) -> String {
    let key = [agent, tool, call_id, arguments].join("\u{0}");
    let id = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, key.as_bytes());
    format!("conf-{}", id.simple())
}

impl ToolRegistry {
    /// An empty registry without a confirmation store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same registry recording confirmations in `store`.
    pub fn with_confirmations(mut self, store: Arc<dyn Confirmations>) -> Self {
        self.confirmations = Some(store);
        self
    }

    /// The same registry recording each call of a task in `journal` before it runs and its
    /// result after: a call with a recorded successful result returns it without running again
    /// (a redelivered step); one whose runs ended in error results runs again (a retry); one
    /// that started and left no result runs again only when its tool is idempotent, else only
    /// with a person's approval.
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Marks tool `name` as not idempotent: a call of it that may have run (recorded as started,
    /// never finished) is not run again without a person's approval.
    pub fn set_not_idempotent(&mut self, name: &str) {
        self.not_idempotent.insert(name.to_owned());
    }

    /// The journal, if any.
    pub fn journal(&self) -> Option<&Arc<dyn Journal>> {
        self.journal.as_ref()
    }

    /// The confirmation store, if any.
    pub fn confirmations(&self) -> Option<&Arc<dyn Confirmations>> {
        self.confirmations.as_ref()
    }

    /// Adds a tool; its parameter schema is compiled now.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let definition = tool.definition();
        let name = definition.function.name.clone();
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        if tool.requires_confirmation() && self.confirmations.is_none() {
            return Err(RegistryError::NoConfirmations(name));
        }
        let schema = match &definition.function.parameters {
            None => None,
            Some(schema) => {
                Some(
                    jsonschema::validator_for(schema).map_err(|e| RegistryError::Schema {
                        tool: name.clone(),
                        reason: e.to_string(),
                    })?,
                )
            }
        };
        self.tools.insert(name, Arc::new(Entry { tool, schema }));
        Ok(())
    }

    /// The definitions of the tools named in `names` (all when `None`), in registration order.
    pub fn definitions(&self, names: Option<&[String]>) -> Vec<ToolDefinition> {
        self.tools
            .iter()
            .filter(|(name, _)| names.is_none_or(|n| n.contains(name)))
            .map(|(_, e)| e.tool.definition())
            .collect()
    }

    /// True when a tool of this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Handles one model tool call for `agent`: parses and validates the argument string, asks
    /// for confirmation where required, runs the tool. Never fails: problems are error results.
    /// Runs in an `execute_tool {name}` span (OpenTelemetry GenAI conventions) with the tool
    /// name, type (`function`: the model calls it and chorus runs it), call id and the task as
    /// `gen_ai.conversation.id`, and `error.type` when the result is an error.
    pub async fn invoke(&self, agent: &str, call: &ToolCall, task_id: Option<&str>) -> ToolOutput {
        self.invoke_scoped(agent, call, task_id, None).await
    }

    /// [`ToolRegistry::invoke`] for a call made while handling the input `input_id` of the task:
    /// journaled under that input too, so that the same call (same id, tool and arguments) made
    /// for another input of the task runs again instead of getting the first one's result. For
    /// callers whose call ids repeat across inputs (a rule agent's, derived from the arguments).
    pub async fn invoke_for_input(
        &self,
        agent: &str,
        call: &ToolCall,
        task_id: &str,
        input_id: &str,
    ) -> ToolOutput {
        self.invoke_scoped(agent, call, Some(task_id), Some(input_id))
            .await
    }

    async fn invoke_scoped(
        &self,
        agent: &str,
        call: &ToolCall,
        task_id: Option<&str>,
        input_id: Option<&str>,
    ) -> ToolOutput {
        let name = &call.function.name;
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {name}"),
            otel.kind = "internal",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = %name,
            gen_ai.tool.type = "function",
            gen_ai.tool.call.id = %call.id,
            gen_ai.agent.name = agent,
            gen_ai.conversation.id = task_id,
            error.type = tracing::field::Empty,
        );
        let output = self
            .run(agent, call, task_id, input_id)
            .instrument(span.clone())
            .await;
        if let chorus_core::ToolOutcome::Error { error_type, .. } = &output.outcome {
            span.record("error.type", error_type.as_str());
        }
        output
    }

    /// [`ToolRegistry::invoke`] without its span.
    async fn run(
        &self,
        agent: &str,
        call: &ToolCall,
        task_id: Option<&str>,
        input_id: Option<&str>,
    ) -> ToolOutput {
        let name = &call.function.name;
        let Some(entry) = self.tools.get(name) else {
            let known: Vec<&str> = self.tools.keys().map(String::as_str).collect();
            return ToolOutput::error(
                "UnknownTool",
                format!(
                    "There is no tool named `{name}`. Call one of: {}.",
                    known.join(", ")
                ),
            );
        };
        let arguments = match parse_arguments(&call.function.arguments) {
            Ok(value) => value,
            Err(output) => return output,
        };
        if let Some(schema) = &entry.schema
            && let Some(output) = schema_errors(schema, &arguments)
        {
            return output;
        }
        let journal = match (&self.journal, task_id) {
            (Some(journal), Some(task)) => Some((journal, Book::new(agent, task))),
            _ => None,
        };
        let keys = CallKeys::of(call, input_id);
        // Runs that ended in an error result (the tool ran and failed) may run again: a retry.
        let mut run = 1;
        if let Some((journal, book)) = &journal {
            let records = match journal.records(book).await {
                Ok(records) => records,
                Err(e) => return ToolOutput::error("JournalUnavailable", e.to_string()),
            };
            if let Some((_, record)) = records.iter().find(|(k, _)| *k == keys.done) {
                return recorded_output(record);
            }
            run += records
                .iter()
                .filter(|(k, _)| k.starts_with(&keys.failed))
                .count();
        }
        if entry.tool.requires_confirmation()
            && let Some(halt) = self.confirm(agent, call, task_id).await
        {
            return halt;
        }
        if let Some((journal, book)) = &journal {
            let start =
                json!({"tool": name, "call_id": call.id, "arguments": call.function.arguments});
            match journal.record(book, &keys.started(run), &start).await {
                Ok(true) => {}
                // This run started before and left no result: it may have had its effect.
                Ok(false) if self.not_idempotent.contains(name.as_str()) => {
                    let rerun = ToolCall {
                        id: format!("{}-rerun-{run}", call.id),
                        ..call.clone()
                    };
                    if let Some(halt) = self.confirm(agent, &rerun, task_id).await {
                        return halt;
                    }
                }
                Ok(false) => {}
                Err(e) => return ToolOutput::error("JournalUnavailable", e.to_string()),
            }
        }
        let output = entry.tool.call(arguments).await;
        if let Some((journal, book)) = &journal {
            let record = json!({
                "outcome": output.outcome.to_text(),
                "media": output.media,
            });
            let key = if output.is_error() {
                format!("{}{run}", keys.failed)
            } else {
                keys.done.clone()
            };
            if let Err(e) = journal.record(book, &key, &record).await {
                tracing::warn!(tool = %name, error = %e, "a tool result was not journaled");
            }
        }
        output
    }

    /// `None` when the call may run now (its approval was consumed); else the result to return.
    async fn confirm(
        &self,
        agent: &str,
        call: &ToolCall,
        task_id: Option<&str>,
    ) -> Option<ToolOutput> {
        let Some(store) = &self.confirmations else {
            return Some(ToolOutput::error(
                "ConfirmationUnavailable",
                "This tool needs a person's approval, but no confirmation store is configured.",
            ));
        };
        let mut pending = Confirmation::pending(
            agent,
            &call.function.name,
            &call.id,
            &call.function.arguments,
            task_id.map(str::to_owned),
        );
        pending.id = confirmation_id(
            agent,
            &call.function.name,
            &call.id,
            &call.function.arguments,
        );
        let recorded = match store.request(pending).await {
            Ok(c) => c,
            Err(e) => return Some(ToolOutput::error("ConfirmationStoreError", e.to_string())),
        };
        match recorded.state {
            ConfirmationState::Pending => Some(ToolOutput::halted(
                CONFIRMATION_REQUIRED,
                format!(
                    "This is a high-risk operation and did not run. You MUST ask the user for explicit \
                     confirmation before proceeding; a person must approve confirmation {}. Do not \
                     call this tool again until it is approved.",
                    recorded.id
                ),
            )),
            ConfirmationState::Rejected => Some(ToolOutput::error(
                "ConfirmationRejected",
                format!(
                    "A person rejected this call{}. Do not retry it; tell the user it was not done.",
                    recorded
                        .note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
            )),
            ConfirmationState::Consumed => Some(ToolOutput::error(
                "ConfirmationAlreadyUsed",
                "This exact call was already approved and ran once; an approval is used only once. \
                 Ask the user again if it must run again.",
            )),
            ConfirmationState::Approved => {
                match store.consume(&recorded.id, &call.function.arguments).await {
                    Ok(_) => None,
                    Err(ConfirmError::ArgumentsChanged(_)) => Some(ToolOutput::error(
                        "ConfirmationArgumentsChanged",
                        "The approval was given for different arguments; ask the user to approve this call.",
                    )),
                    Err(e) => Some(ToolOutput::error("ConfirmationNotUsable", e.to_string())),
                }
            }
        }
    }
}

/// The journal keys of one call: the same call id, tool and arguments give the same keys.
struct CallKeys {
    id: String,
    /// A successful result.
    done: String,
    /// The prefix of error results, followed by the run's number.
    failed: String,
}

impl CallKeys {
    fn of(call: &ToolCall, input_id: Option<&str>) -> CallKeys {
        let mut parts = vec![
            call.id.as_str(),
            call.function.name.as_str(),
            call.function.arguments.as_str(),
        ];
        parts.extend(input_id);
        let key = parts.join("\u{0}");
        let id = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, key.as_bytes()).simple();
        CallKeys {
            done: format!("tool-{id}-done"),
            failed: format!("tool-{id}-failed-"),
            id: id.to_string(),
        }
    }

    /// Run number `run` started.
    fn started(&self, run: usize) -> String {
        format!("tool-{}-started-{run}", self.id)
    }
}

/// The output a journal recorded for a call.
fn recorded_output(record: &Value) -> ToolOutput {
    let outcome = record.get("outcome").and_then(Value::as_str).map_or_else(
        || ToolOutcome::Error {
            error_type: "JournalUnreadable".into(),
            message: "the recorded result of this call has no outcome".into(),
        },
        ToolOutcome::from_text,
    );
    let media = record
        .get("media")
        .cloned()
        .and_then(|m| serde_json::from_value(m).ok())
        .unwrap_or_default();
    ToolOutput { outcome, media }
}

fn parse_arguments(text: &str) -> Result<Value, ToolOutput> {
    let text = if text.trim().is_empty() { "{}" } else { text };
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(ToolOutput::error(
            "InvalidArguments",
            format!(
                "at (root): expected a JSON object of named arguments, found {}. Hint: pass \
                 arguments as an object such as {{\"name\": value}}.",
                json_type(&other)
            ),
        )),
        Err(e) => Err(ToolOutput::error(
            "InvalidArgumentsJson",
            format!(
                "The arguments are not valid JSON (line {} column {}: {e}). Hint: `arguments` must be \
                 a JSON object encoded as a string, with double-quoted keys and no trailing commas.",
                e.line(),
                e.column()
            ),
        )),
    }
}

fn schema_errors(schema: &jsonschema::Validator, arguments: &Value) -> Option<ToolOutput> {
    let problems: Vec<String> = schema
        .iter_errors(arguments)
        .map(|e| {
            let pointer = e.instance_path().to_string();
            let pointer = if pointer.is_empty() {
                "(root)".to_owned()
            } else {
                pointer
            };
            format!("at {pointer}: {e}")
        })
        .collect();
    if problems.is_empty() {
        return None;
    }
    Some(ToolOutput::error(
        "InvalidArguments",
        format!(
            "The arguments do not match the tool's parameter schema: {}. Hint: fix the values at \
             these JSON pointers and call the tool again.",
            problems.join("; ")
        ),
    ))
}
