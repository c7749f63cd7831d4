//! The OpenAI cookbook's heuristic for the tokens of tool (function) definitions.

use chorus_core::ToolDefinition;
use serde_json::Value;

use super::profile::ToolHeuristic;
use super::text::TextTokenizer;

/// Tokens the tool definitions add to a request, by the cookbook's `num_tokens_for_tools`:
/// per function `func_init` + tokens of `name:description` (a final `.` dropped); when it has
/// properties `prop_init`, and per property `prop_key` + tokens of `name:type:description`
/// (`enum_init` + per item `enum_item` + its tokens when it has an enum); once `func_end`.
pub(crate) fn tool_definition_tokens(
    tools: &[ToolDefinition],
    h: &ToolHeuristic,
    text: &dyn TextTokenizer,
) -> usize {
    if tools.is_empty() {
        return 0;
    }
    let count = |s: &str| text.count(s) as i64;
    let mut total = 0i64;
    for tool in tools {
        let f = &tool.function;
        total += h.func_init;
        let desc = f.description.as_deref().unwrap_or_default();
        total += count(&format!(
            "{}:{}",
            f.name,
            desc.strip_suffix('.').unwrap_or(desc)
        ));
        let properties = f
            .parameters
            .as_ref()
            .and_then(|p| p.get("properties"))
            .and_then(Value::as_object);
        let Some(properties) = properties.filter(|p| !p.is_empty()) else {
            continue;
        };
        total += h.prop_init;
        for (key, prop) in properties {
            total += h.prop_key;
            if let Some(items) = prop.get("enum").and_then(Value::as_array) {
                total += h.enum_init;
                for item in items {
                    total += h.enum_item;
                    total += match item {
                        Value::String(s) => count(s),
                        other => count(&other.to_string()),
                    };
                }
            }
            let p_type = match prop.get("type") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let p_desc = prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let p_desc = p_desc.strip_suffix('.').unwrap_or(p_desc);
            total += count(&format!("{key}:{p_type}:{p_desc}"));
        }
    }
    total += h.func_end;
    total.max(0) as usize
}
