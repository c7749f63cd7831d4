//! ProtoJSON's two spellings of a field. A2A's JSON is ProtoJSON, whose parsers must accept a
//! field under its JSON name (`historyLength`) and under its proto name (`history_length`).
//! chorus reads requests under the JSON names, so the proto names of a request's fields are
//! renamed on the way in; keys inside free-form values (`metadata`, a data part's `data`) belong
//! to the sender and are kept as given.

use chorus_core::Problem;
use chorus_formats::to_camel;
use serde_json::{Map, Value};

/// Fields whose value is free-form JSON (`google.protobuf.Struct` or `Value`).
const FREE_FORM: [&str; 2] = ["metadata", "data"];

/// Renames, at every level of `value` outside free-form fields, each key spelled in
/// snake_case to its lowerCamelCase JSON name. A field given under both spellings is refused,
/// as a ProtoJSON parser refuses a field given twice.
pub(super) fn json_names(value: &mut Value) -> Result<(), Problem> {
    rename(value, "")
}

fn rename(value: &mut Value, at: &str) -> Result<(), Problem> {
    match value {
        Value::Object(map) => {
            let snake: Vec<String> = map.keys().filter(|k| k.contains('_')).cloned().collect();
            for key in snake {
                let camel = to_camel(&key);
                if map.contains_key(&camel) {
                    return Err(Problem::expected(
                        format!("{at}/{key}"),
                        format!("the field once, as {camel:?} or as {key:?}"),
                        "both spellings",
                    )
                    .with_hint("ProtoJSON takes a field's JSON name or its proto name, not both"));
                }
                if let Some(v) = map.remove(&key) {
                    map.insert(camel, v);
                }
            }
            descend(map, at)
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                rename(item, &format!("{at}/{i}"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn descend(map: &mut Map<String, Value>, at: &str) -> Result<(), Problem> {
    for (key, inner) in map.iter_mut() {
        if !FREE_FORM.contains(&key.as_str()) {
            rename(inner, &format!("{at}/{key}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn proto_names_become_json_names_outside_free_form_values() {
        let mut params = json!({
            "message": {"message_id": "m-1", "context_id": "c", "role": "ROLE_USER",
                "reference_task_ids": ["t"],
                "parts": [{"text": "hi", "media_type": "text/plain"},
                          {"data": {"customer_info": {"user_id": "u"}}}],
                "metadata": {"trace_id": "x"}},
            "configuration": {"history_length": 2, "return_immediately": true,
                "accepted_output_modes": ["text/plain"]},
        });
        json_names(&mut params).unwrap();
        assert_eq!(
            params,
            json!({
                "message": {"messageId": "m-1", "contextId": "c", "role": "ROLE_USER",
                    "referenceTaskIds": ["t"],
                    "parts": [{"text": "hi", "mediaType": "text/plain"},
                              {"data": {"customer_info": {"user_id": "u"}}}],
                    "metadata": {"trace_id": "x"}},
                "configuration": {"historyLength": 2, "returnImmediately": true,
                    "acceptedOutputModes": ["text/plain"]},
            })
        );
    }

    #[test]
    fn a_field_under_both_names_is_refused_at_its_pointer() {
        let mut params = json!({"configuration": {"history_length": 2, "historyLength": 3}});
        let problem = json_names(&mut params).unwrap_err();
        assert_eq!(problem.pointer, "/configuration/history_length");
    }
}
