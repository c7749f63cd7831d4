//! `†kind.path` variables in tool-call arguments, resolved from the current data (seed 004).
//!
//! A string that is exactly one variable is replaced by the value (any JSON type); a variable
//! inside longer text is replaced by the value's text (strings as they are, other values as
//! JSON). Path segments are object keys or array indexes: `†state.items.0.name`. Kinds and
//! segments use letters, digits, `_` and `-`.

use chorus_core::{Message, ToolCall};
use serde_json::Value;

use super::merge::{current, data_parts};
use crate::error::{ContextError, Result};

/// The variable sigil.
pub const SIGIL: char = '†';

/// A copy of `call` whose arguments have every variable resolved from the data in `messages`;
/// `pointer` is the call's JSON pointer, used in errors.
pub fn resolve_call(call: &ToolCall, messages: &[Message], pointer: &str) -> Result<ToolCall> {
    let args_pointer = format!("{pointer}/function/arguments");
    let mut args: Value =
        serde_json::from_str(&call.function.arguments).map_err(|e| ContextError::Arguments {
            pointer: args_pointer.clone(),
            found: e.to_string(),
        })?;
    resolve_value(&mut args, messages, &args_pointer)?;
    let mut resolved = call.clone();
    resolved.function.arguments = args.to_string();
    Ok(resolved)
}

fn resolve_value(value: &mut Value, messages: &[Message], pointer: &str) -> Result<()> {
    match value {
        Value::String(text) if text.contains(SIGIL) => {
            *value = resolve_string(text, messages, pointer)?;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                resolve_value(item, messages, &format!("{pointer}/{i}"))?;
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let key = key.replace('~', "~0").replace('/', "~1");
                resolve_value(item, messages, &format!("{pointer}/{key}"))?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Splits `text` at the end of the variable starting right after a sigil: returns its length.
fn variable_len(rest: &str) -> usize {
    let mut len = 0;
    let mut after_dot = false;
    for c in rest.chars() {
        if is_name_char(c) {
            after_dot = false;
        } else if c == '.' && len > 0 && !after_dot {
            after_dot = true;
        } else {
            break;
        }
        len += c.len_utf8();
    }
    if after_dot { len - 1 } else { len }
}

fn resolve_string(text: &str, messages: &[Message], pointer: &str) -> Result<Value> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(SIGIL) {
        out.push_str(&rest[..at]);
        let after = &rest[at + SIGIL.len_utf8()..];
        let len = variable_len(after);
        if len == 0 {
            out.push(SIGIL);
            rest = after;
            continue;
        }
        let value = lookup(&after[..len], messages, pointer)?;
        if out.is_empty() && len == after.len() {
            return Ok(value);
        }
        match value {
            Value::String(s) => out.push_str(&s),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[len..];
    }
    out.push_str(rest);
    Ok(Value::String(out))
}

/// The value of `kind.path` in the current data of `messages`.
pub fn lookup(variable: &str, messages: &[Message], pointer: &str) -> Result<Value> {
    let mut segments = variable.split('.');
    let kind = segments.next().unwrap_or_default();
    let fail = |reason: String, hint: Option<String>| {
        ContextError::variable(pointer, format!("{SIGIL}{variable}"), reason, hint)
    };
    let Some(data) = current(messages, kind, None) else {
        let mut kinds: Vec<String> = data_parts(messages)
            .filter_map(|d| d.kind.clone())
            .collect();
        kinds.dedup();
        return Err(fail(
            format!("no data part of kind `{kind}` in the conversation"),
            Some(format!("kinds present: [{}]", kinds.join(", "))),
        ));
    };
    let mut value = &data.data;
    let mut walked = kind.to_owned();
    for segment in segments {
        let next = match value {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            let hint = match value {
                Value::Object(map) => {
                    format!(
                        "keys of {walked}: [{}]",
                        map.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
                Value::Array(items) => format!("{walked} is an array of {} items", items.len()),
                other => format!("{walked} is {other}, which has no members"),
            };
            return Err(fail(format!("`{walked}` has no `{segment}`"), Some(hint)));
        };
        walked.push('.');
        walked.push_str(segment);
        value = next;
    }
    Ok(value.clone())
}
