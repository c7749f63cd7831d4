//! Request parameters, in one table: where each provider format keeps the model, sampling, output
//! limit, stop sequences, tool choice, parallel calls and response format, and how values convert.
//!
//! A chorus conversation keeps them in `extra` under their Chat Completions names and in the Chat
//! Completions shapes (so `chorus` and `openai-chat` carry them as they are). The decoders of the
//! other provider formats call [`read`] on the request's unknown top-level keys; their encoders
//! call [`without`] and [`write`], which reports every parameter the target has no field for.

use serde_json::{Map, Value, json};

use crate::Format;
use crate::common::json::child;
use crate::common::spelling::{key_of, take};
use crate::loss::{Losses, Policy};

/// The name a `json_schema` response format gets when the source format has none.
pub const SCHEMA_NAME: &str = "response";

/// Where a format keeps a parameter.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A top-level key.
    Top(&'static str),
    /// A key inside a top-level object (`generation_config`, `text`, `tool_choice`, ...).
    In(&'static str, &'static str),
    /// The format has no such field; why, for the loss report.
    Absent(&'static str),
    /// A key older requests have, read but never written (the current request type has none).
    Legacy(&'static str, &'static str),
}

/// How a value converts between the Chat Completions shape and a format's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// The same value.
    Same,
    /// A string or a list of strings; providers other than Chat Completions take only the list.
    StopList,
    /// Anthropic writes `disable_parallel_tool_use`, the negation.
    Parallel,
    /// `tool_choice` in each provider's shape.
    ToolChoice,
    /// `response_format` in each provider's shape.
    ResponseFormat,
}

/// One parameter: its Chat Completions names (the first is written by decoders) and its place in
/// the Responses, Anthropic and Gemini requests (Gemini keys in snake_case; camelCase is read too).
struct Row {
    chat: &'static [&'static str],
    responses: Place,
    anthropic: Place,
    gemini: Place,
    shape: Shape,
}

const GEMINI_URL: &str = "a Gemini request names its model in the URL, not in the body";
const NO_SAMPLING: &str =
    "Anthropic requests no longer take sampling settings (anthropic 2.13.0 MessageCreateParams)";

/// The table. `parallel_tool_calls` comes before `tool_choice`: Anthropic keeps it inside it.
const TABLE: [Row; 8] = [
    Row {
        chat: &["model"],
        responses: Place::Top("model"),
        anthropic: Place::Top("model"),
        gemini: Place::Absent(GEMINI_URL),
        shape: Shape::Same,
    },
    Row {
        chat: &["temperature"],
        responses: Place::Top("temperature"),
        anthropic: Place::Legacy("temperature", NO_SAMPLING),
        gemini: Place::In("generation_config", "temperature"),
        shape: Shape::Same,
    },
    Row {
        chat: &["top_p"],
        responses: Place::Top("top_p"),
        anthropic: Place::Legacy("top_p", NO_SAMPLING),
        gemini: Place::In("generation_config", "top_p"),
        shape: Shape::Same,
    },
    Row {
        chat: &["max_completion_tokens", "max_tokens"],
        responses: Place::Top("max_output_tokens"),
        anthropic: Place::Top("max_tokens"),
        gemini: Place::In("generation_config", "max_output_tokens"),
        shape: Shape::Same,
    },
    Row {
        chat: &["stop"],
        responses: Place::Absent("a Responses request has no stop sequences"),
        anthropic: Place::Top("stop_sequences"),
        gemini: Place::In("generation_config", "stop_sequences"),
        shape: Shape::StopList,
    },
    Row {
        chat: &["parallel_tool_calls"],
        responses: Place::Top("parallel_tool_calls"),
        anthropic: Place::In("tool_choice", "disable_parallel_tool_use"),
        gemini: Place::Absent("a Gemini request has no switch for parallel function calls"),
        shape: Shape::Parallel,
    },
    Row {
        chat: &["tool_choice"],
        responses: Place::Top("tool_choice"),
        anthropic: Place::Top("tool_choice"),
        gemini: Place::In("tool_config", "function_calling_config"),
        shape: Shape::ToolChoice,
    },
    Row {
        chat: &["response_format"],
        responses: Place::In("text", "format"),
        anthropic: Place::In("output_config", "format"),
        gemini: Place::In("generation_config", "response_json_schema"),
        shape: Shape::ResponseFormat,
    },
];

impl Row {
    fn place(&self, format: Format) -> Option<Place> {
        match format {
            Format::OpenAiResponses => Some(self.responses),
            Format::Anthropic => Some(self.anthropic),
            Format::Gemini => Some(self.gemini),
            _ => None,
        }
    }
}

/// Whether `key` of a chorus conversation's `extra` is a request parameter of the table.
pub fn is_param(key: &str) -> bool {
    TABLE.iter().any(|row| row.chat.contains(&key))
}

/// `extra` without the request parameters (which [`write`] converts).
pub fn without(extra: &Map<String, Value>) -> Map<String, Value> {
    extra
        .iter()
        .filter(|(k, _)| !is_param(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Takes the parameters `format` keeps in `request` (its unknown top-level keys) out of it, in
/// the Chat Completions names and shapes. A value with no Chat Completions form stays where it is.
pub fn read(format: Format, request: &mut Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for row in &TABLE {
        let Some(place) = row.place(format) else {
            continue;
        };
        let value = match place {
            Place::Absent(_) => None,
            Place::Top(key) | Place::Legacy(key, _) => {
                let key = found(format, request, key);
                let converted = key
                    .as_ref()
                    .and_then(|k| from_provider(row.shape, format, &request[k.as_str()]));
                if converted.is_some()
                    && let Some(k) = key
                {
                    request.shift_remove(&k);
                }
                converted
            }
            Place::In(parent, key) => read_inner(row.shape, format, request, parent, key),
        };
        if let Some(value) = value {
            out.insert(row.chat[0].to_owned(), value);
        }
    }
    out
}

/// The key `format` spells `key` with in `map` (Gemini: either spelling).
fn found(format: Format, map: &Map<String, Value>, key: &str) -> Option<String> {
    if format == Format::Gemini {
        key_of(map, key)
    } else {
        map.contains_key(key).then(|| key.to_owned())
    }
}

fn read_inner(
    shape: Shape,
    format: Format,
    request: &mut Map<String, Value>,
    parent: &str,
    key: &str,
) -> Option<Value> {
    let parent_key = found(format, request, parent)?;
    let Some(Value::Object(inner)) = request.get_mut(&parent_key) else {
        return None;
    };
    let value = if shape == Shape::ResponseFormat && format == Format::Gemini {
        gemini_response_format(inner)
    } else {
        let inner_key = found(format, inner, key)?;
        let converted = from_provider(shape, format, &inner[inner_key.as_str()])?;
        inner.shift_remove(&inner_key);
        Some(converted)
    };
    if inner.is_empty() {
        request.shift_remove(&parent_key);
    }
    value
}

/// A provider value in the Chat Completions shape; `None` when it has none.
fn from_provider(shape: Shape, format: Format, value: &Value) -> Option<Value> {
    match shape {
        Shape::Same | Shape::StopList => Some(value.clone()),
        // Anthropic's flag is the negation; the Responses field is the Chat Completions one.
        Shape::Parallel if format == Format::Anthropic => value.as_bool().map(|b| Value::Bool(!b)),
        Shape::Parallel => Some(value.clone()),
        Shape::ToolChoice => tool_choice_from(format, value),
        Shape::ResponseFormat => response_format_from(format, value),
    }
}

fn function_choice(name: &str) -> Value {
    json!({"type": "function", "function": {"name": name}})
}

fn tool_choice_from(format: Format, value: &Value) -> Option<Value> {
    match format {
        Format::OpenAiResponses => match value {
            Value::String(s) if ["none", "auto", "required"].contains(&s.as_str()) => {
                Some(value.clone())
            }
            Value::Object(m) if m.len() == 2 && m.get("type")? == "function" => {
                Some(function_choice(m.get("name")?.as_str()?))
            }
            _ => None,
        },
        Format::Anthropic => {
            let m = value.as_object()?;
            let kind = m.get("type")?.as_str()?;
            match (kind, m.len()) {
                ("auto", 1) => Some(json!("auto")),
                ("any", 1) => Some(json!("required")),
                ("none", 1) => Some(json!("none")),
                ("tool", 2) => Some(function_choice(m.get("name")?.as_str()?)),
                _ => None,
            }
        }
        Format::Gemini => {
            let m = value.as_object()?;
            let mode = m.get("mode")?.as_str()?;
            let names = key_of(m, "allowed_function_names").and_then(|k| m[k.as_str()].as_array());
            match (mode, names.map(Vec::as_slice), m.len()) {
                ("AUTO", None, 1) => Some(json!("auto")),
                ("NONE", None, 1) => Some(json!("none")),
                ("ANY", None, 1) => Some(json!("required")),
                ("ANY", Some([Value::String(name)]), 2) => Some(function_choice(name)),
                _ => None,
            }
        }
        _ => None,
    }
}

fn response_format_from(format: Format, value: &Value) -> Option<Value> {
    let m = value.as_object()?;
    let kind = m.get("type")?.as_str()?;
    match (format, kind) {
        (Format::OpenAiResponses, "json_schema") => {
            let mut schema = m.clone();
            schema.shift_remove("type");
            Some(json!({"type": "json_schema", "json_schema": schema}))
        }
        (Format::OpenAiResponses, "json_object" | "text") if m.len() == 1 => Some(value.clone()),
        (Format::Anthropic, "json_schema") if m.len() == 2 => Some(
            json!({"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": m.get("schema")?}}),
        ),
        _ => None,
    }
}

/// Gemini's response format: `response_mime_type` JSON, with `response_json_schema` or without
/// any schema (a response_schema in Google's OpenAPI subset stays as it is).
fn gemini_response_format(config: &mut Map<String, Value>) -> Option<Value> {
    let mime_key = key_of(config, "response_mime_type")?;
    if config[mime_key.as_str()] != "application/json"
        || key_of(config, "response_schema").is_some()
    {
        return None;
    }
    config.shift_remove(&mime_key);
    Some(match take(config, "response_json_schema") {
        Some(schema) => {
            json!({"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": schema}})
        }
        None => json!({"type": "json_object"}),
    })
}

/// Writes the parameters of `extra` into the `target` request `out` (into objects `out` already
/// holds, in either spelling); a parameter the target cannot take is reported at `/<name>`.
pub fn write(
    target: Format,
    extra: &Map<String, Value>,
    out: &mut Map<String, Value>,
    losses: &mut Losses,
) {
    // Anthropic keeps the parallel switch inside the tool choice: it is written last.
    let parallel_last = TABLE
        .iter()
        .filter(|r| r.shape != Shape::Parallel)
        .chain(TABLE.iter().filter(|r| r.shape == Shape::Parallel));
    for row in parallel_last {
        let mut given = row
            .chat
            .iter()
            .filter_map(|name| extra.get(*name).map(|v| (*name, v)));
        let Some((name, value)) = given.next() else {
            continue;
        };
        for (other, _) in given {
            losses.push(
                child("", other),
                Policy::Dropped,
                format!("`{name}` is sent; a request takes one output token limit"),
            );
        }
        let at = child("", name);
        let Some(place) = row.place(target) else {
            continue;
        };
        let result = match place {
            Place::Absent(why) | Place::Legacy(_, why) => Err(why.to_owned()),
            Place::Top(key) => to_provider(row.shape, target, value, &at, losses).map(|v| {
                out.insert(key.to_owned(), v);
            }),
            Place::In(parent, key) => {
                write_inner(row.shape, target, value, out, (parent, key), &at, losses)
            }
        };
        if let Err(why) = result {
            losses.push(at, Policy::Dropped, why);
        }
    }
}

fn write_inner(
    shape: Shape,
    target: Format,
    value: &Value,
    out: &mut Map<String, Value>,
    (parent, key): (&str, &str),
    at: &str,
    losses: &mut Losses,
) -> Result<(), String> {
    if shape == Shape::Parallel && target == Format::Anthropic {
        return anthropic_parallel(value, out);
    }
    let fields = if shape == Shape::ResponseFormat && target == Format::Gemini {
        gemini_response_format_to(value, at, losses)?
    } else {
        vec![(key, to_provider(shape, target, value, at, losses)?)]
    };
    let parent_key = key_of(out, parent).unwrap_or_else(|| parent.to_owned());
    let inner = out
        .entry(parent_key)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(inner) = inner else {
        return Err(format!("the request's `{parent}` is not an object"));
    };
    for (k, v) in fields {
        inner.insert(k.to_owned(), v);
    }
    Ok(())
}

/// Anthropic keeps `parallel_tool_calls: false` as `disable_parallel_tool_use: true` in its tool
/// choice (an `auto` choice when the request has none).
fn anthropic_parallel(value: &Value, out: &mut Map<String, Value>) -> Result<(), String> {
    let parallel = value
        .as_bool()
        .ok_or("parallel_tool_calls is not a boolean")?;
    let choice = out
        .entry("tool_choice")
        .or_insert_with(|| json!({"type": "auto"}));
    match choice {
        Value::Object(m) if m.get("type").is_some_and(|t| t != "none") => {
            m.insert("disable_parallel_tool_use".into(), Value::Bool(!parallel));
            Ok(())
        }
        _ => Err("an Anthropic tool choice of none has no parallel switch".into()),
    }
}

/// A Chat Completions value in the target's shape, or why it has none.
fn to_provider(
    shape: Shape,
    target: Format,
    value: &Value,
    at: &str,
    losses: &mut Losses,
) -> Result<Value, String> {
    match shape {
        Shape::Same | Shape::Parallel => Ok(value.clone()),
        Shape::StopList => match value {
            Value::String(s) => Ok(json!([s])),
            Value::Array(_) => Ok(value.clone()),
            _ => Err("stop is neither a string nor a list".into()),
        },
        Shape::ToolChoice => tool_choice_to(target, value),
        Shape::ResponseFormat => response_format_to(target, value, at, losses),
    }
}

fn tool_choice_to(target: Format, value: &Value) -> Result<Value, String> {
    let name = || -> Option<&str> {
        (value.get("type")? == "function")
            .then(|| value.pointer("/function/name")?.as_str())
            .flatten()
    };
    let simple = value.as_str();
    let why = || format!("{} cannot express this tool_choice", target.id());
    Ok(match (target, simple, name()) {
        (Format::OpenAiResponses, Some("none" | "auto" | "required"), _) => value.clone(),
        (Format::OpenAiResponses, _, Some(name)) => json!({"type": "function", "name": name}),
        (Format::Anthropic, Some("auto"), _) => json!({"type": "auto"}),
        (Format::Anthropic, Some("required"), _) => json!({"type": "any"}),
        (Format::Anthropic, Some("none"), _) => json!({"type": "none"}),
        (Format::Anthropic, _, Some(name)) => json!({"type": "tool", "name": name}),
        (Format::Gemini, Some("auto"), _) => json!({"mode": "AUTO"}),
        (Format::Gemini, Some("none"), _) => json!({"mode": "NONE"}),
        (Format::Gemini, Some("required"), _) => json!({"mode": "ANY"}),
        (Format::Gemini, _, Some(name)) => {
            json!({"mode": "ANY", "allowed_function_names": [name]})
        }
        _ => return Err(why()),
    })
}

/// The parts of a Chat Completions json_schema format: name, schema, and the fields a target
/// without them drops (reported).
fn json_schema_parts<'a>(
    value: &'a Value,
    target: Format,
    at: &str,
    losses: &mut Losses,
) -> Result<&'a Value, String> {
    let spec = value
        .get("json_schema")
        .and_then(Value::as_object)
        .ok_or("a json_schema response format without its `json_schema` object")?;
    let schema = spec
        .get("schema")
        .ok_or("a json_schema response format without a schema")?;
    for (key, v) in spec {
        let default = key == "name" && v == SCHEMA_NAME;
        if key != "schema" && !default {
            losses.push(
                format!("{at}/json_schema/{key}"),
                Policy::Dropped,
                format!("{} response formats have no `{key}`", target.id()),
            );
        }
    }
    Ok(schema)
}

fn response_format_to(
    target: Format,
    value: &Value,
    at: &str,
    losses: &mut Losses,
) -> Result<Value, String> {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match (target, kind) {
        (Format::OpenAiResponses, "json_schema") => {
            let mut out = json!({"type": "json_schema"});
            let spec = value
                .get("json_schema")
                .and_then(Value::as_object)
                .ok_or("a json_schema response format without its `json_schema` object")?;
            if let Value::Object(m) = &mut out {
                m.extend(spec.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            Ok(out)
        }
        (Format::OpenAiResponses, "json_object" | "text") => Ok(value.clone()),
        (Format::Anthropic, "json_schema") => {
            let schema = json_schema_parts(value, target, at, losses)?;
            Ok(json!({"type": "json_schema", "schema": schema}))
        }
        _ => Err(format!("{} has no `{kind}` response format", target.id())),
    }
}

fn gemini_response_format_to<'a>(
    value: &Value,
    at: &str,
    losses: &mut Losses,
) -> Result<Vec<(&'a str, Value)>, String> {
    let json = json!("application/json");
    match value.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let schema = json_schema_parts(value, Format::Gemini, at, losses)?;
            Ok(vec![
                ("response_mime_type", json),
                ("response_json_schema", schema.clone()),
            ])
        }
        Some("json_object") => Ok(vec![("response_mime_type", json)]),
        Some("text") => Ok(vec![("response_mime_type", json!("text/plain"))]),
        _ => Err("gemini has no such response format".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    /// Reads `request` of `from`, writes the parameters for `to`.
    fn convert(from: Format, request: Value, to: Format) -> (Map<String, Value>, Vec<String>) {
        let mut request = map(request);
        let chat = read(from, &mut request);
        let mut out = Map::new();
        let mut losses = Losses::default();
        write(to, &chat, &mut out, &mut losses);
        let losses = losses.finish(()).losses;
        (out, losses.into_iter().map(|l| l.path).collect())
    }

    #[test]
    fn the_output_limit_has_one_name_per_format() {
        let chat = map(json!({"max_tokens": 9}));
        for (format, expected) in [
            (Format::OpenAiResponses, json!({"max_output_tokens": 9})),
            (Format::Anthropic, json!({"max_tokens": 9})),
            (
                Format::Gemini,
                json!({"generation_config": {"max_output_tokens": 9}}),
            ),
        ] {
            let mut out = Map::new();
            let mut losses = Losses::default();
            write(format, &chat, &mut out, &mut losses);
            assert_eq!(Value::Object(out.clone()), expected, "{}", format.id());
            assert!(losses.finish(()).losses.is_empty());
            let mut back = out.clone();
            assert_eq!(
                read(format, &mut back),
                map(json!({"max_completion_tokens": 9}))
            );
            assert!(back.is_empty(), "{}: {back:?}", format.id());
        }
    }

    #[test]
    fn tool_choice_takes_each_providers_shape() {
        let named = json!({"type": "function", "function": {"name": "f"}});
        let cases = [
            (
                Format::OpenAiResponses,
                json!({"type": "function", "name": "f"}),
            ),
            (Format::Anthropic, json!({"type": "tool", "name": "f"})),
        ];
        for (format, expected) in cases {
            let mut out = Map::new();
            let mut losses = Losses::default();
            let chat = map(json!({"tool_choice": named, "parallel_tool_calls": false}));
            write(format, &chat, &mut out, &mut losses);
            assert!(losses.finish(()).losses.is_empty());
            assert_eq!(read(format, &mut out.clone()), chat, "{}", format.id());
            if format == Format::Anthropic {
                let expected =
                    json!({"type": "tool", "name": "f", "disable_parallel_tool_use": true});
                assert_eq!(out["tool_choice"], expected);
            } else {
                assert_eq!(out["tool_choice"], expected);
            }
        }
        let (out, losses) = convert(
            Format::Anthropic,
            json!({"tool_choice": {"type": "any", "disable_parallel_tool_use": true}}),
            Format::Gemini,
        );
        assert_eq!(
            Value::Object(out),
            json!({"tool_config": {"function_calling_config": {"mode": "ANY"}}})
        );
        assert_eq!(losses, ["/parallel_tool_calls"]);
        let (out, _) = convert(
            Format::Gemini,
            json!({"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["g"]}}}),
            Format::Anthropic,
        );
        assert_eq!(
            Value::Object(out),
            json!({"tool_choice": {"type": "tool", "name": "g"}})
        );
    }

    #[test]
    fn what_a_target_has_no_field_for_is_reported() {
        let (out, losses) = convert(
            Format::Anthropic,
            json!({"model": "claude", "stop_sequences": ["END"], "temperature": 0.5}),
            Format::OpenAiResponses,
        );
        assert_eq!(
            Value::Object(out),
            json!({"model": "claude", "temperature": 0.5})
        );
        assert_eq!(losses, ["/stop"]);
        let (out, losses) = convert(
            Format::OpenAiResponses,
            json!({"model": "gpt", "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}, "strict": true}}}),
            Format::Gemini,
        );
        assert_eq!(
            Value::Object(out),
            json!({"generation_config": {"response_mime_type": "application/json", "response_json_schema": {"type": "object"}}})
        );
        assert_eq!(
            losses,
            [
                "/model",
                "/response_format/json_schema/name",
                "/response_format/json_schema/strict"
            ]
        );
    }

    #[test]
    fn what_has_no_chat_form_stays_in_the_request() {
        let mut request = map(
            json!({"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []},
            "text": {"format": {"type": "text"}, "verbosity": "low"}}),
        );
        let chat = read(Format::OpenAiResponses, &mut request);
        assert_eq!(
            Value::Object(chat),
            json!({"response_format": {"type": "text"}})
        );
        assert_eq!(
            Value::Object(request),
            json!({"tool_choice": {"type": "allowed_tools", "mode": "auto", "tools": []}, "text": {"verbosity": "low"}})
        );
    }
}
