//! A tool definition written back in the shape (wrapped in `{type, function}` or flat) and key
//! order it was given, as chat templates print the tools they are handed.

use serde_json::{Map, Value};

use crate::tool::ToolDefinition;

/// Optional fields whose `null` decodes as absent, at the top of a wrapped definition.
const WRAPPER_OPTIONALS: [&str; 1] = ["type"];
/// Optional fields whose `null` decodes as absent, inside `function`.
const FUNCTION_OPTIONALS: [&str; 3] = ["description", "parameters", "strict"];
/// Optional fields whose `null` decodes as absent, in a flat definition.
const FLAT_OPTIONALS: [&str; 4] = ["type", "description", "parameters", "strict"];

impl ToolDefinition {
    /// The definition as JSON with its current values, in the shape and key order of
    /// [`given`](ToolDefinition::given); as it serializes (`{type, function}`) when built in code.
    pub fn as_given(&self) -> Value {
        let canonical = match serde_json::to_value(self) {
            Ok(Value::Object(map)) => map,
            // A struct of strings, booleans and JSON values always serializes to an object.
            _ => Map::new(),
        };
        Value::Object(match &self.given {
            None => canonical,
            Some(given) if given.contains_key("function") => wrapped(canonical, given),
            Some(given) => flat(canonical, given),
        })
    }
}

/// `{type, function: {...}}` with both levels in the given order.
fn wrapped(mut canonical: Map<String, Value>, given: &Map<String, Value>) -> Map<String, Value> {
    if let (Some(Value::Object(function)), Some(Value::Object(given_function))) =
        (canonical.get_mut("function"), given.get("function"))
    {
        *function = in_given_order(
            std::mem::take(function),
            given_function,
            &FUNCTION_OPTIONALS,
        );
    }
    in_given_order(canonical, given, &WRAPPER_OPTIONALS)
}

/// The function's fields at the top, beside `type` when one was given or it is not `function`.
fn flat(mut canonical: Map<String, Value>, given: &Map<String, Value>) -> Map<String, Value> {
    let mut current = match canonical.shift_remove("function") {
        Some(Value::Object(function)) => function,
        _ => Map::new(),
    };
    let kind = canonical.shift_remove("type");
    // Decoding calls a flat definition that names no type a `function`; that is not printed.
    let implied = kind.as_ref().is_some_and(|k| k == "function")
        && !given.get("type").is_some_and(Value::is_string);
    if let Some(kind) = kind.filter(|_| !implied) {
        current.insert("type".into(), kind);
    }
    for (key, value) in canonical {
        current.entry(key).or_insert(value);
    }
    in_given_order(current, given, &FLAT_OPTIONALS)
}

/// `current`'s entries in the order of `given`'s keys, then the keys `given` lacks; an optional
/// field given as `null` (decoded as absent) and still absent prints as `null` again.
fn in_given_order(
    mut current: Map<String, Value>,
    given: &Map<String, Value>,
    optionals: &[&str],
) -> Map<String, Value> {
    let mut out = Map::with_capacity(current.len());
    for (key, was) in given {
        match current.shift_remove(key) {
            Some(value) => {
                out.insert(key.clone(), value);
            }
            None if was.is_null() && optionals.contains(&key.as_str()) => {
                out.insert(key.clone(), Value::Null);
            }
            None => {}
        }
    }
    out.append(&mut current);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A definition with the typed view `typed` that was given as `given`.
    fn given_as(typed: Value, given: Value) -> ToolDefinition {
        let mut tool: ToolDefinition = serde_json::from_value(typed).unwrap();
        tool.given = given.as_object().cloned();
        tool
    }

    fn text(value: &Value) -> String {
        serde_json::to_string(value).unwrap()
    }

    #[test]
    fn a_definition_built_in_code_prints_as_it_serializes() {
        let tool: ToolDefinition = serde_json::from_value(
            json!({"function": {"parameters": {"b": 1, "a": 2}, "name": "f"}, "type": "function"}),
        )
        .unwrap();
        assert_eq!(tool.as_given(), serde_json::to_value(&tool).unwrap());
        assert_eq!(
            text(&tool.as_given()),
            r#"{"type":"function","function":{"name":"f","parameters":{"b":1,"a":2}}}"#
        );
    }

    #[test]
    fn a_wrapped_definition_keeps_both_key_orders() {
        let given = json!({"function": {"x": 1, "parameters": {"type": "object"}, "name": "f",
            "description": "d"}, "y": true, "type": "function"});
        let tool = given_as(given.clone(), given.clone());
        assert_eq!(text(&tool.as_given()), text(&given));
    }

    #[test]
    fn a_flat_definition_stays_flat_without_a_type_it_did_not_have() {
        let given =
            json!({"name": "f", "parameters": {"type": "object"}, "x": 1, "description": "d"});
        let typed = json!({"type": "function", "function": given.clone()});
        assert_eq!(
            text(&given_as(typed, given.clone()).as_given()),
            text(&given)
        );
    }

    #[test]
    fn a_flat_definition_keeps_its_type_where_it_was() {
        let given = json!({"name": "f", "type": "function", "strict": true});
        let typed = json!({"type": "function", "function": {"name": "f", "strict": true}});
        assert_eq!(
            text(&given_as(typed, given.clone()).as_given()),
            text(&given)
        );
        let other = json!({"name": "f", "strict": true});
        let typed = json!({"type": "custom", "function": {"name": "f", "strict": true}});
        assert_eq!(
            text(&given_as(typed, other).as_given()),
            r#"{"name":"f","strict":true,"type":"custom"}"#
        );
    }

    #[test]
    fn optional_fields_given_as_null_print_as_null() {
        let given = json!({"type": null, "function": {"description": null, "name": "f",
            "parameters": null, "strict": null}});
        let tool = given_as(given.clone(), given.clone());
        assert_eq!(tool.function.description, None);
        assert_eq!(text(&tool.as_given()), text(&given));
        let flat = json!({"strict": null, "name": "f", "type": null});
        let typed = json!({"type": "function", "function": {"name": "f"}});
        assert_eq!(text(&given_as(typed, flat.clone()).as_given()), text(&flat));
    }

    #[test]
    fn current_values_win_and_new_fields_come_last() {
        let given = json!({"function": {"description": "old", "name": "f", "strict": true,
            "x": 1}, "type": "function"});
        let mut tool = given_as(given.clone(), given);
        tool.function.description = Some("new".into());
        tool.function.strict = None;
        tool.function.extra.remove("x");
        tool.function.parameters = Some(json!({"type": "object"}));
        assert_eq!(
            text(&tool.as_given()),
            r#"{"function":{"description":"new","name":"f","parameters":{"type":"object"}},"type":"function"}"#
        );
    }

    #[test]
    fn the_given_object_does_not_count_in_equality() {
        let wrapped = json!({"type": "function", "function": {"name": "f"}});
        let plain: ToolDefinition = serde_json::from_value(wrapped.clone()).unwrap();
        let flat = given_as(wrapped, json!({"name": "f"}));
        assert_eq!(plain, flat);
        assert_ne!(plain.as_given(), flat.as_given());
    }
}
