//! Structured requests (seed 004): `Request(config, schema, messages)` with text and data parts.
//!
//! A [`StructuredRequest`] asks a [`ModelClient`] for a reply that conforms to an output JSON
//! Schema (sent as `response_format` to Chat Completions, as the "# Response Formats" section
//! to Harmony). The reply's text is parsed as JSON and validated; when it does not conform, the
//! reply and the validation errors (JSON pointer and message each) go back to the model as a
//! user message, for at most [`StructuredRequest::max_repairs`] repairs.
//! [`StructuredRequest::with_input`] binds `input` data parts so a request can be called like a
//! function (a batch runs in parallel with one `_instance` per input); [`StateLoop`] runs a loop
//! that keeps its `state` data part between steps.

mod input;
mod state;

use chorus_core::{Message, Role, TokenUsage};
use serde_json::Value;

pub use state::StateLoop;

use crate::cost::UsageTotals;
use crate::model::{ModelClient, ModelError, ModelReply, ModelRequest};

/// Repairs allowed after the first reply when none is set.
pub const DEFAULT_MAX_REPAIRS: u32 = 2;

/// A request: the model configuration, an optional output schema and the messages.
#[derive(Debug, Clone, Default)]
pub struct StructuredRequest {
    /// Model, tools and sampling; its `messages` and `output_schema` are set from this request.
    pub config: ModelRequest,
    /// The schema the reply must conform to, with its name.
    pub schema: Option<(String, Value)>,
    /// The conversation: text and data parts.
    pub messages: Vec<Message>,
    /// Repairs allowed after a non-conforming reply (`None`: [`DEFAULT_MAX_REPAIRS`]).
    pub max_repairs: Option<u32>,
}

/// One point where a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the value (`""` for the whole value).
    pub pointer: String,
    /// What is wrong there.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pointer = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(f, "{pointer}: {}", self.message)
    }
}

/// A structured request failed.
#[derive(Debug, thiserror::Error)]
pub enum StructuredError {
    /// The model call failed.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A schema (output, input or state) does not compile.
    #[error("{what} is not a valid JSON Schema: {message}")]
    InvalidSchema {
        /// Which schema.
        what: String,
        /// The compiler's message.
        message: String,
    },
    /// The reply still broke the schema after every repair.
    #[error(
        "the reply does not conform to schema `{schema}` after {attempts} attempt(s): {}",
        list(violations)
    )]
    NonConforming {
        /// The schema's name.
        schema: String,
        /// Replies received.
        attempts: u32,
        /// What was wrong with the last reply.
        violations: Vec<Violation>,
        /// The last reply's text.
        reply: String,
    },
    /// An input does not match the request's `input` schema.
    #[error(
        "input {instance} does not match the input schema: {}",
        list(violations)
    )]
    Input {
        /// The `_instance` of the input (its index in a batch).
        instance: Value,
        /// What is wrong.
        violations: Vec<Violation>,
    },
}

fn list(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(Violation::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A conforming reply.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredReply {
    /// The reply parsed as JSON (`None` without an output schema).
    pub value: Option<Value>,
    /// The last model reply.
    pub reply: ModelReply,
    /// Replies received (1 when the first conformed).
    pub attempts: u32,
    /// Usage and cost of all attempts together.
    pub usage: UsageTotals,
}

/// A compiled schema that reports violations as pointer + message.
pub struct Schema {
    validator: jsonschema::Validator,
}

impl Schema {
    /// Compiles `schema`; `what` names it in errors.
    pub fn compile(what: &str, schema: &Value) -> Result<Self, StructuredError> {
        jsonschema::validator_for(schema)
            .map(|validator| Schema { validator })
            .map_err(|e| StructuredError::InvalidSchema {
                what: what.to_owned(),
                message: e.to_string(),
            })
    }

    /// Every violation of `value`, empty when it conforms.
    pub fn violations(&self, value: &Value) -> Vec<Violation> {
        self.validator
            .iter_errors(value)
            .map(|e| Violation {
                pointer: e.instance_path().as_str().to_owned(),
                message: e.to_string(),
            })
            .collect()
    }
}

/// Reads a reply's text as JSON; a Markdown code fence around it is tolerated.
pub fn parse_reply(text: &str) -> Result<Value, Violation> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed);
    serde_json::from_str(body.trim()).map_err(|e| Violation {
        pointer: String::new(),
        message: format!("the reply is not JSON ({e}); reply with the JSON value only"),
    })
}

/// The user message that sends violations back to the model.
pub fn repair_message(schema_name: &str, violations: &[Violation]) -> Message {
    let mut text = format!(
        "Your reply does not conform to the JSON Schema `{schema_name}`. Errors (JSON pointer: message):\n"
    );
    for violation in violations {
        text.push_str(&format!("- {violation}\n"));
    }
    text.push_str("Reply again with only the corrected JSON value.");
    Message::new(Role::User, text)
}

/// The usage in the metadata of a reply's messages.
fn usage_of(reply: &ModelReply) -> impl Iterator<Item = &TokenUsage> {
    reply
        .messages
        .iter()
        .filter_map(|m| m.metadata.as_ref()?.token_usage.as_ref())
}

/// The text the model meant as its answer: the last message with text.
fn answer_text(reply: &ModelReply) -> String {
    reply
        .messages
        .iter()
        .rev()
        .map(Message::text)
        .find(|t| !t.trim().is_empty())
        .unwrap_or_default()
}

impl StructuredRequest {
    /// A request for `model` with `messages` and no output schema.
    pub fn new(model: impl Into<String>, messages: Vec<Message>) -> Self {
        StructuredRequest {
            config: ModelRequest {
                model: model.into(),
                ..ModelRequest::default()
            },
            messages,
            ..Self::default()
        }
    }

    /// Sets the output schema.
    pub fn with_schema(mut self, name: impl Into<String>, schema: Value) -> Self {
        self.schema = Some((name.into(), schema));
        self
    }

    /// Sets the number of repairs.
    pub fn with_max_repairs(mut self, repairs: u32) -> Self {
        self.max_repairs = Some(repairs);
        self
    }

    /// Sends the request, validating and repairing the reply against the output schema.
    pub async fn run(&self, client: &dyn ModelClient) -> Result<StructuredReply, StructuredError> {
        let schema = match &self.schema {
            Some((name, schema)) => Some((
                name,
                Schema::compile(&format!("output schema `{name}`"), schema)?,
            )),
            None => None,
        };
        let mut request = self.config.clone();
        request.messages = self.messages.clone();
        request.output_schema = self.schema.clone();
        let mut usage = UsageTotals::default();
        let repairs = self.max_repairs.unwrap_or(DEFAULT_MAX_REPAIRS);
        let mut attempt = 1;
        loop {
            let reply = client.complete(&request, None).await?;
            usage_of(&reply).for_each(|u| usage.add(u));
            let Some((name, schema)) = &schema else {
                return Ok(StructuredReply {
                    value: None,
                    reply,
                    attempts: attempt,
                    usage,
                });
            };
            let text = answer_text(&reply);
            let violations = match parse_reply(&text) {
                Ok(value) => {
                    let violations = schema.violations(&value);
                    if violations.is_empty() {
                        return Ok(StructuredReply {
                            value: Some(value),
                            reply,
                            attempts: attempt,
                            usage,
                        });
                    }
                    violations
                }
                Err(violation) => vec![violation],
            };
            if attempt > repairs {
                return Err(StructuredError::NonConforming {
                    schema: name.to_string(),
                    attempts: attempt,
                    violations,
                    reply: text,
                });
            }
            request.messages.extend(reply.messages);
            request.messages.push(repair_message(name, &violations));
            attempt += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_name_the_pointer_and_the_problem() {
        let schema = Schema::compile(
            "s",
            &json!({"type": "object", "properties": {"age": {"type": "number"}}, "required": ["name"]}),
        )
        .unwrap();
        let violations = schema.violations(&json!({"age": "thirty"}));
        assert_eq!(violations.len(), 2);
        assert!(
            violations
                .iter()
                .any(|v| v.pointer == "/age" && v.message.contains("number"))
        );
        assert!(
            violations
                .iter()
                .any(|v| v.pointer.is_empty() && v.message.contains("name"))
        );
        assert!(
            schema
                .violations(&json!({"name": "x", "age": 3}))
                .is_empty()
        );
    }

    #[test]
    fn replies_parse_with_or_without_a_fence() {
        assert_eq!(parse_reply(" {\"a\": 1} ").unwrap(), json!({"a": 1}));
        assert_eq!(parse_reply("```json\n[1]\n```").unwrap(), json!([1]));
        let err = parse_reply("Sure! {\"a\": 1}").unwrap_err();
        assert!(err.message.contains("not JSON"));
    }

    #[test]
    fn a_bad_schema_is_a_clear_error() {
        let Err(err) = Schema::compile("output schema `x`", &json!({"type": 12})) else {
            panic!("compiled");
        };
        assert!(
            err.to_string()
                .starts_with("output schema `x` is not a valid JSON Schema"),
            "{err}"
        );
    }
}
