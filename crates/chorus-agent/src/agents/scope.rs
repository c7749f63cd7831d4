//! `${path}` placeholders in rule templates, filled from what the agent received and did.
//!
//! The scope is a JSON document: `input` (the message or handoff received), `sender`, `text`,
//! `task_id`, `message_id`, `agent`, and `tools.<name>` (results of tool actions so far). A path
//! is dotted (`input.payload.data.customer_info.name`, array items by number).

use serde_json::{Map, Value, json};

use super::Item;

/// What placeholders can refer to.
#[derive(Debug, Clone)]
pub struct Scope {
    root: Value,
}

impl Scope {
    /// The scope of `agent` handling `input` for `task_id`.
    pub fn new(agent: &str, input: &Item, task_id: &str) -> Self {
        Scope {
            root: json!({
                "agent": agent,
                "input": input.to_json(),
                "sender": input.sender().unwrap_or_default(),
                "text": input.text(),
                "task_id": task_id,
                "message_id": input.id().unwrap_or_default(),
                "tools": {},
            }),
        }
    }

    /// Records a tool's result under `tools.<name>`.
    pub fn set_tool_result(&mut self, name: &str, result: Value) {
        if let Some(Value::Object(tools)) = self.root.get_mut("tools") {
            tools.insert(name.to_owned(), result);
        }
    }

    /// The value at a dotted path.
    pub fn get(&self, path: &str) -> Option<&Value> {
        path.split('.')
            .try_fold(&self.root, |value, key| match value {
                Value::Object(map) => map.get(key),
                Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            })
    }
}

/// Fills every `${path}` in the strings of `template`; a string that is exactly one placeholder
/// takes the value's JSON type, otherwise the value is written as text.
pub fn fill(template: &Value, scope: &Scope) -> Result<Value, String> {
    match template {
        Value::String(s) => fill_string(s, scope),
        Value::Array(items) => items
            .iter()
            .map(|v| fill(v, scope))
            .collect::<Result<_, _>>()
            .map(Value::Array),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| fill(v, scope).map(|v| (k.clone(), v)))
            .collect::<Result<Map<_, _>, _>>()
            .map(Value::Object),
        other => Ok(other.clone()),
    }
}

fn lookup<'a>(scope: &'a Scope, path: &str) -> Result<&'a Value, String> {
    scope.get(path).ok_or_else(|| {
        format!("template placeholder ${{{path}}} names nothing in what the agent received")
    })
}

fn fill_string(s: &str, scope: &Scope) -> Result<Value, String> {
    if let Some(path) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}'))
        && !path.contains('}')
    {
        return lookup(scope, path).cloned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let tail = &rest[start + 2..];
        let end = tail
            .find('}')
            .ok_or_else(|| format!("unclosed `${{` in template {s:?}"))?;
        match lookup(scope, &tail[..end])? {
            Value::String(text) => out.push_str(text),
            other => out.push_str(&other.to_string()),
        }
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    Ok(Value::String(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::{Message, Role};

    #[test]
    fn fills_whole_values_and_text() {
        let mut msg = Message::new(Role::User, "router drops");
        msg.name = Some("customer".into());
        let mut scope = Scope::new("cs", &Item::Message(msg), "t1");
        scope.set_tool_result("ping", json!({"loss": [0, 12]}));
        let filled = fill(
            &json!({"a": "${tools.ping.loss}", "b": "from ${sender}: ${text} (${tools.ping.loss.1}%)"}),
            &scope,
        )
        .unwrap();
        assert_eq!(
            filled,
            json!({"a": [0, 12], "b": "from customer: router drops (12%)"})
        );
        let err = fill(&json!("${input.nothing}"), &scope).unwrap_err();
        assert!(err.contains("${input.nothing}"), "{err}");
    }
}
