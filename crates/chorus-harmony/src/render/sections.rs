//! The text of system and developer messages: identity, reasoning, tools, channels, formats.

use std::collections::BTreeMap;

use crate::model::{DeveloperContent, ResponseFormat, SystemContent, ToolNamespaceConfig};
use crate::typescript::{TypeScriptStyle, schema_to_typescript};

/// The text of a system message. `function_tools` says whether any developer message of the
/// conversation declares `functions` tools (which adds a line to the channel section).
pub(crate) fn system_text(
    system: &SystemContent,
    function_tools: bool,
    style: TypeScriptStyle,
) -> String {
    let mut sections = Vec::new();
    let header: Vec<String> = [
        system.model_identity.clone(),
        system
            .knowledge_cutoff
            .as_ref()
            .map(|d| format!("Knowledge cutoff: {d}")),
        system
            .conversation_start_date
            .as_ref()
            .map(|d| format!("Current date: {d}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !header.is_empty() {
        sections.push(header.join("\n"));
    }
    if let Some(effort) = system.reasoning_effort {
        sections.push(format!("Reasoning: {}", effort.as_str()));
    }
    if let Some(tools) = system.tools.as_ref().filter(|t| !t.is_empty()) {
        sections.push(tools_text(tools, style));
    }
    if let Some(channels) = &system.channel_config
        && !channels.valid_channels.is_empty()
    {
        let mut text = format!("# Valid channels: {}.", channels.valid_channels.join(", "));
        if channels.channel_required {
            text.push_str(" Channel must be included for every message.");
        }
        if function_tools {
            text.push_str("\nCalls to these tools must go to the commentary channel: 'functions'.");
        }
        sections.push(text);
    }
    sections.join("\n\n")
}

/// The text of a developer message.
pub(crate) fn developer_text(developer: &DeveloperContent, style: TypeScriptStyle) -> String {
    let mut sections = Vec::new();
    if let Some(instructions) = &developer.instructions {
        sections.push("# Instructions".to_string());
        sections.push(instructions.clone());
    }
    if let Some(tools) = developer.tools.as_ref().filter(|t| !t.is_empty()) {
        sections.push(tools_text(tools, style));
    }
    if let Some(formats) = developer
        .response_formats
        .as_ref()
        .filter(|f| !f.is_empty())
    {
        sections.push(response_formats_text(formats));
    }
    sections.join("\n\n")
}

/// The `# Tools` section: one `## name` block per namespace, in name order.
pub(crate) fn tools_text(
    namespaces: &BTreeMap<String, ToolNamespaceConfig>,
    style: TypeScriptStyle,
) -> String {
    let mut sections = vec!["# Tools".to_string()];
    for namespace in namespaces.values() {
        let typed = !namespace.tools.is_empty();
        let mut lines = vec![format!("## {}\n", namespace.name)];
        if let Some(description) = &namespace.description {
            for line in description.lines() {
                lines.push(if typed {
                    format!("// {line}")
                } else {
                    line.to_string()
                });
            }
        }
        if typed {
            lines.push(format!("namespace {} {{\n", namespace.name));
            for tool in &namespace.tools {
                lines.extend(tool.description.lines().map(|line| format!("// {line}")));
                lines.push(match &tool.parameters {
                    Some(schema) => format!(
                        "type {} = (_: {}) => any;\n",
                        tool.name,
                        schema_to_typescript(schema, style)
                    ),
                    None => format!("type {} = () => any;\n", tool.name),
                });
            }
            lines.push(format!("}} // namespace {}", namespace.name));
        }
        sections.push(lines.join("\n"));
    }
    sections.join("\n\n")
}

/// The `# Response Formats` section: each format's name, description and compact JSON Schema.
fn response_formats_text(formats: &[ResponseFormat]) -> String {
    let mut text = String::from("# Response Formats");
    for format in formats {
        text.push_str(&format!("\n\n## {}\n\n", format.name));
        if let Some(description) = &format.description {
            for line in description.lines() {
                text.push_str(&format!("// {line}\n"));
            }
        }
        text.push_str(&crate::reference_json::to_string(&format.schema));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn response_formats_follow_the_tools() {
        let developer = DeveloperContent {
            instructions: Some("Be brief.".into()),
            tools: None,
            response_formats: Some(vec![ResponseFormat {
                name: "shopping_list".into(),
                description: Some("Items to buy".into()),
                schema: json!({"type": "object", "properties": {"items": {"type": "array"}}}),
            }]),
        };
        assert_eq!(
            developer_text(&developer, TypeScriptStyle::Reference),
            "# Instructions\n\nBe brief.\n\n# Response Formats\n\n## shopping_list\n\n// Items to buy\n{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\"}}}"
        );
    }

    #[test]
    fn system_text_lists_channels_and_function_line() {
        let text = system_text(&SystemContent::default(), true, TypeScriptStyle::Reference);
        assert!(text.ends_with("# Valid channels: analysis, commentary, final. Channel must be included for every message.\nCalls to these tools must go to the commentary channel: 'functions'."), "{text}");
        assert!(text.starts_with("You are ChatGPT, a large language model trained by OpenAI.\nKnowledge cutoff: 2024-06\n\nReasoning: medium"));
    }
}
