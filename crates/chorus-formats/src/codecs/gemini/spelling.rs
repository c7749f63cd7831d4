//! Gemini key spelling: a request given in camelCase (as the JavaScript SDK and Google's REST
//! reference write it) comes back in camelCase; snake_case is the default.

use serde_json::{Map, Value};

use crate::common::json::unknown_keys;
use crate::common::spelling::{key_of, to_camel};

/// The multi-word keys the Gemini codec itself reads and writes.
const KNOWN: [&str; 18] = [
    "system_instruction",
    "function_declarations",
    "function_call",
    "function_response",
    "inline_data",
    "file_data",
    "mime_type",
    "file_uri",
    "thought_signature",
    "generation_config",
    "tool_config",
    "function_calling_config",
    "allowed_function_names",
    "max_output_tokens",
    "top_p",
    "stop_sequences",
    "response_mime_type",
    "response_json_schema",
];

/// Keys whose values are the caller's data (arguments, results, schemas): never renamed or read.
const DATA: [&str; 10] = [
    "args",
    "response",
    "parameters",
    "parameters_json_schema",
    "parametersJsonSchema",
    "response_json_schema",
    "responseJsonSchema",
    "response_schema",
    "responseSchema",
    "x-gemini",
];

/// A field under its snake_case or camelCase name, with the key it was found under.
pub(super) fn get<'a>(map: &'a Map<String, Value>, snake: &str) -> Option<(&'a Value, String)> {
    let key = key_of(map, snake)?;
    map.get(&key).map(|value| (value, key))
}

/// The keys of `map` other than `known` (given in snake_case; camelCase forms count too).
pub(super) fn rest(map: &Map<String, Value>, known: &[&str]) -> Map<String, Value> {
    let camel: Vec<String> = known.iter().map(|k| to_camel(k)).collect();
    let mut all: Vec<&str> = known.to_vec();
    all.extend(camel.iter().map(String::as_str));
    unknown_keys(map, &all)
}

/// The value `extras::SPELLING` records for a camelCase request.
pub(super) const CAMEL: &str = "camelCase";

/// Whether `request` spells the codec's keys in camelCase only (some camelCase, no snake_case).
pub(super) fn is_camel(request: &Value) -> bool {
    let (mut snake, mut camel) = (0usize, 0usize);
    count(request, &mut snake, &mut camel);
    camel > 0 && snake == 0
}

fn count(value: &Value, snake: &mut usize, camel: &mut usize) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if KNOWN.contains(&key.as_str()) {
                    *snake += 1;
                } else if KNOWN.iter().any(|k| to_camel(k) == *key) {
                    *camel += 1;
                }
                if !DATA.contains(&key.as_str()) {
                    count(v, snake, camel);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| count(v, snake, camel)),
        _ => {}
    }
}

/// Renames the codec's snake_case keys in `value` to camelCase, keeping the key order.
pub(super) fn camelize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let old = std::mem::take(map);
            *map = old
                .into_iter()
                .map(|(key, mut v)| {
                    if !DATA.contains(&key.as_str()) {
                        camelize(&mut v);
                    }
                    let key = if KNOWN.contains(&key.as_str()) {
                        to_camel(&key)
                    } else {
                        key
                    };
                    (key, v)
                })
                .collect::<Map<String, Value>>();
        }
        Value::Array(items) => items.iter_mut().for_each(camelize),
        _ => {}
    }
}
