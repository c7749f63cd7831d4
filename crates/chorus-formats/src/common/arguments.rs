//! Tool-call arguments for targets that take a JSON object instead of a string.

use chorus_core::ToolCall;
use serde_json::{Map, Value};

use crate::loss::{Losses, Policy};

/// The compact JSON text of an object, as decoders write arguments back into a string.
pub fn compact(map: &Map<String, Value>) -> String {
    serde_json::to_string(map).unwrap_or_default()
}

/// The call's arguments as an object; `at` is the call's pointer. Arguments whose text would not
/// come back the same (spacing, key order) or that are not an object are reported.
pub fn as_object(call: &ToolCall, at: &str, losses: &mut Losses) -> Value {
    let path = || format!("{at}/function/arguments");
    match call.parsed_arguments() {
        Ok(Value::Object(map)) => {
            if compact(&map) != call.function.arguments {
                losses.push(
                    path(),
                    Policy::Downgraded,
                    "arguments are sent as an object; their text comes back re-serialized",
                );
            }
            Value::Object(map)
        }
        _ => {
            losses.push(
                path(),
                Policy::Downgraded,
                "arguments are not a JSON object; sent as {}",
            );
            Value::Object(Map::new())
        }
    }
}
