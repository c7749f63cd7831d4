//! Turns JSON Schema errors into problems that say what was expected, what was found, and,
//! for mistakes people often make, how to fix them.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use super::problem::Problem;

/// The JSON type name of a value, as used in messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A short rendering of a found value for messages.
pub(crate) fn shown(value: &Value) -> String {
    match value {
        Value::String(s) if s.chars().count() > 60 => {
            format!("\"{}…\"", s.chars().take(60).collect::<String>())
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        other => json_type(other).to_owned(),
    }
}

/// Converts one schema error into a problem.
pub(crate) fn problem_from_schema_error(error: &ValidationError<'_>) -> Problem {
    let pointer = error.instance_path().as_str().to_owned();
    let found = error.instance();
    let message = match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            format!("expected {expected}, found {}", describe_found(found))
        }
        ValidationErrorKind::Required { property } => {
            format!("expected property {property}, found it missing")
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            format!(
                "expected only known properties, found unexpected {}",
                quoted(unexpected)
            )
        }
        ValidationErrorKind::Enum { options } => {
            format!("expected one of {options}, found {}", shown(found))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("expected {expected_value}, found {}", shown(found))
        }
        ValidationErrorKind::Format { format } => {
            format!("expected a {format} string, found {}", shown(found))
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!(
                "expected a string matching {pattern}, found {}",
                shown(found)
            )
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("expected at least {limit}, found {}", shown(found))
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("expected at most {limit}, found {}", shown(found))
        }
        _ => format!("{error}"),
    };
    let hint = hint_for(&pointer, error.kind(), found);
    let problem = Problem::error(pointer, message);
    match hint {
        Some(hint) => problem.with_hint(hint),
        None => problem,
    }
}

fn describe_found(found: &Value) -> String {
    match found {
        Value::Object(_) | Value::Array(_) => json_type(found).to_owned(),
        _ => format!("{} {}", json_type(found), shown(found)),
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Hints for the mistakes people make most.
fn hint_for(pointer: &str, kind: &ValidationErrorKind, found: &Value) -> Option<String> {
    let last = pointer.rsplit('/').next().unwrap_or_default();
    let hint = match (last, kind) {
        ("arguments", ValidationErrorKind::Type { .. })
            if found.is_object() || found.is_array() =>
        {
            "tool-call `arguments` must be a JSON string: serialize the object (JSON.stringify, json.dumps)"
        }
        ("role", ValidationErrorKind::Enum { .. }) => match found.as_str() {
            Some("model") => "Gemini's `model` role is `assistant` here",
            Some("human") => "use `user` for a person",
            Some("ai") => "use `assistant` for the model",
            Some("function") => "the old `function` role is `tool` now",
            _ => "roles are system, developer, user, assistant and tool",
        },
        ("priority" | "severity" | "risk_level", ValidationErrorKind::Enum { .. }) => {
            "priorities are upper case: LOW, MEDIUM, HIGH, CRITICAL"
        }
        ("handoff_type", ValidationErrorKind::Enum { .. }) => {
            "handoff types are upper case (e.g. ESCALATION); register a data schema to add a custom type"
        }
        ("content", ValidationErrorKind::Type { .. }) if found.is_object() => {
            "content is a string or an array of parts: wrap a single part in [ ]"
        }
        ("image_url", ValidationErrorKind::Type { .. }) if found.is_string() => {
            "`image_url` is an object: {\"url\": \"…\"}"
        }
        ("input_audio", ValidationErrorKind::Type { .. }) if found.is_string() => {
            "`input_audio` is an object: {\"data\": \"<base64>\", \"format\": \"wav\"}"
        }
        (_, ValidationErrorKind::Format { format }) if format == "date-time" => {
            "use RFC 3339 with a time zone, e.g. 2023-10-27T10:30:00.123Z"
        }
        (_, ValidationErrorKind::Format { format }) if format == "uuid" => {
            "message ids are UUIDs, e.g. a1b2c3d4-e5f6-7890-1234-567890abcdef"
        }
        ("protocol_version", ValidationErrorKind::Pattern { .. }) => {
            "use MAJOR.MINOR.PATCH, e.g. 1.0.0"
        }
        ("type", ValidationErrorKind::Constant { .. }) => "content part types are lower case",
        _ => return None,
    };
    Some(hint.to_owned())
}
