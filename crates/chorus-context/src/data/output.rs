//! `_outputPath`: a tool call that names one stores its result as a new data part (seed 004).
//!
//! The path is read from the call's `_outputPath` key (next to `id` and `function`) or from its
//! arguments object. `"state.weather.today"` (an optional leading `†` is allowed) stores the
//! result at `weather.today` of kind `state`; a path without a dot is a key of kind `state`.
//! The result is the tool message's text, parsed as JSON when it is JSON.

use chorus_core::{DataPart, Message, ToolCall};
use serde_json::{Map, Value};

use super::variables::SIGIL;
use crate::error::{ContextError, Result};

/// The `_outputPath` key.
pub const OUTPUT_PATH: &str = "_outputPath";

/// The data part that stores `result` (a tool message answering `call`), or `None` when the call
/// has no `_outputPath`; `pointer` is the call's JSON pointer, used in errors.
pub fn output_data(call: &ToolCall, result: &Message, pointer: &str) -> Result<Option<DataPart>> {
    let from_args = call
        .parsed_arguments()
        .ok()
        .and_then(|a| a.get(OUTPUT_PATH).cloned());
    let (path, at) = match (call.extra.get(OUTPUT_PATH), from_args) {
        (Some(p), _) => (p.clone(), format!("{pointer}/{OUTPUT_PATH}")),
        (None, Some(p)) => (p, format!("{pointer}/function/arguments/{OUTPUT_PATH}")),
        (None, None) => return Ok(None),
    };
    let Value::String(path) = path else {
        return Err(ContextError::variable(
            &at,
            path.to_string(),
            format!("expected a string like \"state.result\"; found {path}"),
            None,
        ));
    };
    let trimmed = path.trim_start_matches(SIGIL);
    let segments: Vec<&str> = trimmed.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(ContextError::variable(
            &at,
            path.clone(),
            "expected dot-separated non-empty names like \"state.result\"",
            None,
        ));
    }
    let (kind, keys) = if segments.len() == 1 {
        ("state", segments.as_slice())
    } else {
        (segments[0], &segments[1..])
    };
    let text = result.text();
    let mut value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    for key in keys.iter().rev() {
        let mut map = Map::new();
        map.insert((*key).to_owned(), value);
        value = Value::Object(map);
    }
    Ok(Some(DataPart {
        kind: Some(kind.to_owned()),
        data: value,
        ..DataPart::default()
    }))
}
