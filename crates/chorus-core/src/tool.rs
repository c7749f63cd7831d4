//! Tool calls, tool definitions and the typed view of tool outcomes (seed 000, A.2).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A call the model asks for; `arguments` is a JSON document in a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCall {
    /// Call id that the tool message answers with `tool_call_id`.
    pub id: String,
    /// Always `function` in Chat Completions.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The function and its arguments.
    pub function: FunctionCall,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The function part of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionCall {
    /// Name of the function to call.
    pub name: String,
    /// Arguments as a JSON string, e.g. `"{\"city\":\"Paris\"}"`.
    pub arguments: String,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolCall {
    /// A function call with a fresh argument string.
    pub fn function(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        ToolCall {
            id: id.into(),
            kind: Some("function".into()),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.to_string(),
                extra: Map::new(),
            },
            extra: Map::new(),
        }
    }

    /// The arguments parsed as JSON.
    pub fn parsed_arguments(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.function.arguments)
    }
}

/// A tool the model may call: name, description and JSON Schema parameters.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ToolDefinition {
    /// Always `function` in Chat Completions.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The function's signature.
    pub function: FunctionDefinition,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// The object a client sent (wrapped or flat, keys in its order), for formats that print
    /// tools as given ([`ToolDefinition::as_given`]); only its shape and key order are used, the
    /// values always come from the fields above. Neither serialized nor compared.
    #[serde(skip)]
    pub given: Option<Map<String, Value>>,
}

/// Equal when the fields are; the shape and key order a definition was given in do not count.
impl PartialEq for ToolDefinition {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.function == other.function && self.extra == other.extra
    }
}

/// Name, description and parameter schema of a function tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionDefinition {
    /// Function name.
    pub name: String,
    /// What the function does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Whether the provider must follow the schema exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a tool result says happened, read from its JSON text (seed 000, A.2.2 and exercise 2).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool ran; its JSON result (any status other than error or halted).
    Success(Value),
    /// The tool failed; the model may repair its call.
    Error {
        /// Machine-readable error class, e.g. `InvalidDateRange`.
        error_type: String,
        /// What went wrong and how to fix it.
        message: String,
    },
    /// The tool did not run and waits for a person (e.g. `human_confirmation_required`).
    Halted {
        /// Why it stopped.
        reason: String,
        /// What the model must do now.
        message: String,
    },
    /// The result is not JSON; plain text output.
    Text(String),
}

impl ToolOutcome {
    /// Reads the outcome from a tool result's text.
    pub fn from_text(text: &str) -> Self {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return ToolOutcome::Text(text.to_owned());
        };
        let field = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match value.get("status").and_then(Value::as_str) {
            Some("error") => ToolOutcome::Error {
                error_type: field("error_type"),
                message: field("message"),
            },
            Some("halted") => ToolOutcome::Halted {
                reason: field("reason"),
                message: field("message"),
            },
            _ => ToolOutcome::Success(value),
        }
    }

    /// The JSON text of this outcome, as a tool message carries it.
    pub fn to_text(&self) -> String {
        match self {
            ToolOutcome::Success(value) => value.to_string(),
            ToolOutcome::Error {
                error_type,
                message,
            } => serde_json::json!({
                "status": "error", "error_type": error_type, "message": message
            })
            .to_string(),
            ToolOutcome::Halted { reason, message } => serde_json::json!({
                "status": "halted", "reason": reason, "message": message
            })
            .to_string(),
            ToolOutcome::Text(text) => text.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_outcomes_of_seed_000() {
        let error =
            r#"{"status": "error", "error_type": "InvalidDateRange", "message": "too late"}"#;
        assert_eq!(
            ToolOutcome::from_text(error),
            ToolOutcome::Error {
                error_type: "InvalidDateRange".into(),
                message: "too late".into()
            }
        );
        let halted =
            r#"{"status": "halted", "reason": "human_confirmation_required", "message": "ask"}"#;
        assert!(
            matches!(ToolOutcome::from_text(halted), ToolOutcome::Halted { reason, .. } if reason == "human_confirmation_required")
        );
        assert!(matches!(
            ToolOutcome::from_text(r#"{"status":"success"}"#),
            ToolOutcome::Success(_)
        ));
        assert_eq!(
            ToolOutcome::from_text("42 degrees"),
            ToolOutcome::Text("42 degrees".into())
        );
    }

    #[test]
    fn outcome_text_round_trips() {
        let halted = ToolOutcome::Halted {
            reason: "r".into(),
            message: "m".into(),
        };
        assert_eq!(ToolOutcome::from_text(&halted.to_text()), halted);
    }
}
