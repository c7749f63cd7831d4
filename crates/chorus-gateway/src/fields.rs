//! What both APIs read from a request into the same shape: the checked request the prompt
//! needs ([`ChatRequest`]), and the field readers they share (structured formats, whole
//! numbers, text-only content, the "expected X, found Y" refusal).

use chorus_core::{Content, ContentPart, Conversation, Message, Nullable, Role};
use chorus_harmony::{ReasoningEffort, ResponseFormat};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// What the client asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// The model the client named.
    pub model: String,
    /// The conversation (messages and tools), past reasoning as reasoning parts.
    pub conversation: Conversation,
    /// The reasoning effort of the system message.
    pub effort: Option<ReasoningEffort>,
    /// A structured-output format for the developer message.
    pub response_format: Option<ResponseFormat>,
    /// A function the reply must call (`tool_choice` naming one).
    pub forced_tool: Option<String>,
    /// Stop strings for the final text.
    pub stop: Vec<String>,
    /// Stream the reply as chunks.
    pub stream: bool,
    /// Send a last chunk with the usage.
    pub include_usage: bool,
    /// Sampling settings sent to the upstream as they are (`temperature`, `max_tokens`, ...).
    pub sampling: Map<String, Value>,
    /// Choices to generate (`n`; 1 in the Responses API).
    pub choices: usize,
}

impl ChatRequest {
    /// The sampling settings of choice `index`: a `seed` is moved on by the index, so that the
    /// choices of a seeded request differ from each other and each is the same on a retry.
    pub fn sampling_of(&self, index: usize) -> Map<String, Value> {
        let mut sampling = self.sampling.clone();
        if index > 0
            && let Some(seed) = sampling.get("seed").and_then(Value::as_i64)
        {
            sampling.insert("seed".into(), json!(seed.wrapping_add(index as i64)));
        }
        sampling
    }
}

/// gpt-oss reads text only: an image, audio or file part is refused, not dropped.
pub(crate) fn text_only(conversation: &Conversation) -> Result<(), ApiError> {
    for (index, message) in conversation.messages.iter().enumerate() {
        if let Nullable::Value(Content::Parts(parts)) = &message.content {
            for (part_index, part) in parts.iter().enumerate() {
                let fine = matches!(part, ContentPart::Text(_))
                    || (matches!(part, ContentPart::Reasoning(_))
                        && message.role == Role::Assistant);
                if !fine {
                    return Err(ApiError::unsupported(
                        format!("/messages/{index}/content/{part_index}"),
                        format!(
                            "gpt-oss reads text only; a {} part cannot be carried",
                            part.type_name()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A structured-output format: `format` names its type (`text`, `json_object`,
/// `json_schema`), `spec` (at `spec_at`) holds a JSON schema's name, schema and description.
pub(crate) fn structured_format(
    format: &Value,
    spec: Option<&Value>,
    at: &str,
    spec_at: &str,
) -> Result<Option<ResponseFormat>, ApiError> {
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(ResponseFormat {
            name: "json_object".into(),
            description: Some("Any JSON object.".into()),
            schema: json!({"type": "object"}),
        })),
        Some("json_schema") => {
            let spec = spec.and_then(Value::as_object).ok_or_else(|| {
                ApiError::invalid(
                    spec_at,
                    "missing_required_parameter",
                    "a `name` and a `schema` are required for type json_schema",
                )
            })?;
            let name = match spec.get("name") {
                Some(Value::String(name)) if !name.is_empty() => name.clone(),
                Some(other) => return Err(expected(&format!("{spec_at}/name"), "a name", other)),
                None => {
                    return Err(ApiError::invalid(
                        format!("{spec_at}/name"),
                        "missing_required_parameter",
                        "`name` is required",
                    ));
                }
            };
            let schema = match spec.get("schema") {
                Some(schema @ Value::Object(_)) => schema.clone(),
                None => json!({"type": "object"}),
                Some(other) => {
                    return Err(expected(
                        &format!("{spec_at}/schema"),
                        "a JSON Schema object",
                        other,
                    ));
                }
            };
            let description = spec
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Ok(Some(ResponseFormat {
                name,
                description,
                schema,
            }))
        }
        _ => Err(expected(
            at,
            "{\"type\": \"text\" | \"json_object\" | \"json_schema\"}",
            format,
        )),
    }
}

/// A reasoning effort at `pointer`: `low`, `medium`, `high` or null.
pub(crate) fn effort(value: &Value, pointer: &str) -> Result<Option<ReasoningEffort>, ApiError> {
    match value {
        Value::Null => Ok(None),
        Value::String(effort) => match effort.as_str() {
            "low" => Ok(Some(ReasoningEffort::Low)),
            "medium" => Ok(Some(ReasoningEffort::Medium)),
            "high" => Ok(Some(ReasoningEffort::High)),
            other => Err(ApiError::unsupported(
                pointer,
                format!("gpt-oss reasons at low, medium or high effort, not {other:?}"),
            )),
        },
        other => Err(expected(pointer, "low, medium or high", other)),
    }
}

pub(crate) fn whole_number(pointer: &str, value: Value) -> Result<Value, ApiError> {
    match value.as_u64() {
        Some(_) => Ok(value),
        None if value.as_i64().is_some() && pointer == "/seed" => Ok(value),
        None => Err(expected(pointer, "a whole number", &value)),
    }
}

pub(crate) fn expected(pointer: &str, what: &str, found: &Value) -> ApiError {
    let found = match found {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    };
    ApiError::invalid(
        pointer,
        "invalid_type",
        format!("expected {what}, found {found}"),
    )
}

/// A message the reply is made of (used by the prompt to drop past reasoning).
pub(crate) fn is_final_answer(message: &Message) -> bool {
    message.role == Role::Assistant && message.calls().is_empty() && !message.text().is_empty()
}
