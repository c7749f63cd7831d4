//! Turns JSON Schema errors into problems that say what was expected, what was found, and,
//! for mistakes people often make, how to fix them.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use crate::problem::Problem;

/// The JSON type name of a value with its article (`a string`, `null`), as used in messages.
pub fn json_type(value: &Value) -> &'static str {
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

/// A problem found by a schema, with what it says about the document's values.
pub(crate) struct SchemaProblem {
    /// The problem as reported.
    pub problem: Problem,
    /// What the schema found wrong.
    pub broken: Broken,
}

/// What a schema problem means for the checks that read the document after the schema.
pub(crate) enum Broken {
    /// A property the schema does not know; the known values are still as the schema expects.
    UnknownField,
    /// The value at this pointer (and everything under it) is missing or not what the schema
    /// expects, so later checks must not read it.
    Value(String),
}

/// The broken rule, as far as hints care.
enum Rule<'a> {
    /// The types expected, as the message names them.
    Type(String),
    Enum,
    /// The value expected.
    Const(String),
    Format(&'a str),
    /// The pattern expected.
    Pattern(String),
    /// The property missing.
    Required(String),
    /// A property the schema does not list.
    Unknown,
    /// A minimum or maximum.
    Limit,
    Other,
}

/// Converts one schema error into problems; `anyOf`/`oneOf` failures are explained through the
/// branch that fits the value's type, so the pointer lands where the mistake is.
pub(crate) fn problems_from_schema_error(error: &ValidationError<'_>) -> Vec<SchemaProblem> {
    let pointer = error.instance_path().as_str();
    let found = error.instance();
    let mut broken = Broken::Value(pointer.to_owned());
    let (message, rule) = match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            return explain_alternatives(pointer, found, context);
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" or "),
            };
            (
                format!("expected {expected}, found {}", describe_found(found)),
                Rule::Type(expected),
            )
        }
        ValidationErrorKind::Required { property } => {
            if let Some(name) = property.as_str() {
                broken = Broken::Value(format!("{pointer}/{}", escape(name)));
            }
            (
                format!("expected property {property}, found it missing"),
                Rule::Required(property.to_string()),
            )
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            broken = Broken::UnknownField;
            (
                format!(
                    "expected only known properties, found unexpected {}",
                    quoted(unexpected)
                ),
                Rule::Unknown,
            )
        }
        ValidationErrorKind::Enum { options } => (
            format!("expected one of {options}, found {}", shown(found)),
            Rule::Enum,
        ),
        ValidationErrorKind::Constant { expected_value } => (
            format!("expected {expected_value}, found {}", shown(found)),
            Rule::Const(expected_value.to_string()),
        ),
        ValidationErrorKind::Format { format } => (
            format!("expected a {format} string, found {}", shown(found)),
            Rule::Format(format),
        ),
        ValidationErrorKind::Pattern { pattern } => (
            format!(
                "expected a string matching {pattern}, found {}",
                shown(found)
            ),
            Rule::Pattern(pattern.to_string()),
        ),
        ValidationErrorKind::Minimum { limit } => (
            format!("expected at least {limit}, found {}", shown(found)),
            Rule::Limit,
        ),
        ValidationErrorKind::Maximum { limit } => (
            format!("expected at most {limit}, found {}", shown(found)),
            Rule::Limit,
        ),
        _ => (error.to_string(), Rule::Other),
    };
    vec![SchemaProblem {
        problem: problem_with_hint(pointer, message, &rule, found),
        broken,
    }]
}

/// `name` as one JSON-pointer segment.
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// A problem that makes the value at its own pointer unreadable for later checks.
fn broken_value(problem: Problem) -> SchemaProblem {
    SchemaProblem {
        broken: Broken::Value(problem.pointer.clone()),
        problem,
    }
}

/// A problem with the hint for a known mistake, else the rule's own: every problem a schema
/// finds says how to fix it.
fn problem_with_hint(pointer: &str, message: String, rule: &Rule<'_>, found: &Value) -> Problem {
    let hint = hint_for(pointer, rule, found).unwrap_or_else(|| rule_hint(rule));
    Problem::error(pointer, message).with_hint(hint)
}

/// The hint any breach of `rule` gets when no known mistake explains it (it names no pointer:
/// the problem's own is where it applies, and a data part's is prefixed after this).
fn rule_hint(rule: &Rule<'_>) -> String {
    let schema =
        "`chorus schema` prints the schema (with `--handoff-type TYPE` for a handoff's data)";
    match rule {
        Rule::Required(property) => format!("add {property} to this object; {schema}"),
        Rule::Unknown => format!("remove it or correct its spelling; {schema}"),
        Rule::Type(expected) => {
            let article = match expected.starts_with(['a', 'e', 'i', 'o', 'u']) {
                true => "an",
                false => "a",
            };
            format!("give {article} {expected} here")
        }
        Rule::Enum => "use one of the listed values, spelled exactly (case counts)".to_owned(),
        Rule::Const(expected) => format!("use exactly {expected}"),
        Rule::Format(format) => format!("give a valid {format} string"),
        Rule::Pattern(pattern) => format!("give a string matching {pattern}"),
        Rule::Limit => "give a value within the limit".to_owned(),
        Rule::Other => format!("see what the schema asks here; {schema}"),
    }
}

/// Explains a failed `anyOf`/`oneOf`: an enum of constants reads as "one of"; otherwise the
/// branch whose type fits the value explains the failure; otherwise the expected types are listed.
fn explain_alternatives(
    pointer: &str,
    found: &Value,
    branches: &[Vec<ValidationError<'static>>],
) -> Vec<SchemaProblem> {
    let at_root = |e: &ValidationError<'_>| e.instance_path().as_str() == pointer;
    let constants: Option<Vec<String>> = branches
        .iter()
        .map(|errors| match errors.as_slice() {
            [e] if at_root(e) => match e.kind() {
                ValidationErrorKind::Constant { expected_value } => {
                    Some(expected_value.to_string())
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    if let Some(constants) = constants {
        let message = format!(
            "expected one of [{}], found {}",
            constants.join(", "),
            shown(found)
        );
        return vec![broken_value(problem_with_hint(
            pointer,
            message,
            &Rule::Enum,
            found,
        ))];
    }
    let mismatched = |e: &ValidationError<'_>| {
        at_root(e)
            && matches!(
                e.kind(),
                ValidationErrorKind::Type { .. } | ValidationErrorKind::Constant { .. }
            )
    };
    let fitting = branches
        .iter()
        .filter(|errors| !errors.iter().any(mismatched))
        .min_by_key(|errors| errors.len());
    if let Some(errors) = fitting {
        return errors.iter().flat_map(problems_from_schema_error).collect();
    }
    let mut expected: Vec<String> = Vec::new();
    for error in branches.iter().flatten().filter(|e| at_root(e)) {
        let name = match error.kind() {
            ValidationErrorKind::Type {
                kind: TypeKind::Single(t),
            } => t.to_string(),
            ValidationErrorKind::Type {
                kind: TypeKind::Multiple(set),
            } => set
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
            ValidationErrorKind::Constant { expected_value } => expected_value.to_string(),
            _ => continue,
        };
        if !expected.contains(&name) {
            expected.push(name);
        }
    }
    let expected = expected.join(" or ");
    let message = format!("expected {expected}, found {}", describe_found(found));
    vec![broken_value(problem_with_hint(
        pointer,
        message,
        &Rule::Type(expected),
        found,
    ))]
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
fn hint_for(pointer: &str, rule: &Rule<'_>, found: &Value) -> Option<String> {
    let last = pointer.rsplit('/').next().unwrap_or_default();
    let hint = match (last, rule) {
        ("arguments", Rule::Type(_)) if found.is_object() || found.is_array() => {
            "tool-call `arguments` must be a JSON string: serialize the object (JSON.stringify, json.dumps)"
        }
        ("role", Rule::Enum) => match found.as_str() {
            Some("model") => "Gemini's `model` role is `assistant` here",
            Some("human") => "use `user` for a person",
            Some("ai") => "use `assistant` for the model",
            Some("function") => "the old `function` role is `tool` now",
            _ => "roles are system, developer, user, assistant and tool",
        },
        ("priority" | "severity" | "risk_level", Rule::Enum) => {
            "priorities are upper case: LOW, MEDIUM, HIGH, CRITICAL"
        }
        ("handoff_type", Rule::Enum) => {
            "handoff types are upper case (e.g. ESCALATION); register a data schema to add a custom type"
        }
        ("content", Rule::Type(_)) if found.is_object() => {
            "content is a string or an array of parts: wrap a single part in [ ]"
        }
        ("image_url", Rule::Type(_)) if found.is_string() => {
            "`image_url` is an object: {\"url\": \"…\"}"
        }
        ("input_audio", Rule::Type(_)) if found.is_string() => {
            "`input_audio` is an object: {\"data\": \"<base64>\", \"format\": \"wav\"}"
        }
        (_, Rule::Format("date-time")) => {
            "use RFC 3339 with a time zone, e.g. 2023-10-27T10:30:00.123Z"
        }
        (_, Rule::Format("uuid")) => {
            "message ids are UUIDs, e.g. a1b2c3d4-e5f6-7890-1234-567890abcdef"
        }
        ("protocol_version", Rule::Pattern(_)) => "use MAJOR.MINOR.PATCH, e.g. 1.0.0",
        ("type", Rule::Const(_)) => "content part types are lower case",
        _ => return None,
    };
    Some(hint.to_owned())
}
