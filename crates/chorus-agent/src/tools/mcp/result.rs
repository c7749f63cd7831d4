//! An MCP `tools/call` result as a seed-000 tool result.
//!
//! Text content becomes the result's text (several text blocks joined by blank lines); image
//! and audio content become media parts beside it (`image_url` with a data URL, `input_audio`);
//! an embedded resource gives its text, a resource link its URI. `structuredContent`, when
//! present, is the result only when the server sent no text (servers send its JSON as text too). `isError` makes
//! it an `McpToolError` error result whose message is the text.

use chorus_core::{ContentPart, ToolOutcome};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::tools::ToolOutput;

/// The tool result for `result`.
pub(super) fn to_output(result: &CallToolResult) -> ToolOutput {
    // The blocks as their JSON (the protocol's shape): stable across rmcp's Rust types.
    let blocks = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    let mut texts = Vec::new();
    let mut media = Vec::new();
    let mut kinds = Vec::new();
    for block in blocks.as_array().into_iter().flatten() {
        let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
        match field("type") {
            "text" => texts.push(field("text").to_owned()),
            "image" => {
                kinds.push(field("mimeType").to_owned());
                media.extend(image(field("mimeType"), field("data")));
            }
            "audio" => {
                kinds.push(field("mimeType").to_owned());
                media.extend(audio(field("mimeType"), field("data")));
            }
            "resource" => {
                let resource = &block["resource"];
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => texts.push(text.to_owned()),
                    None => texts.push(format!(
                        "[resource {}]",
                        resource.get("uri").and_then(Value::as_str).unwrap_or("")
                    )),
                }
            }
            "resource_link" => texts.push(format!("[resource {}]", field("uri"))),
            other => texts.push(format!("[{other} content]")),
        }
    }
    let text = if texts.is_empty() && !media.is_empty() {
        // The model still gets a text to read beside the media.
        format!("[{} attached]", kinds.join(", "))
    } else {
        texts.join("\n\n")
    };
    if result.is_error == Some(true) {
        let message = if text.is_empty() {
            "The tool reported an error without a message.".to_owned()
        } else {
            text
        };
        return ToolOutput::error("McpToolError", message).with_media(media);
    }
    let outcome = match &result.structured_content {
        Some(value) if texts.is_empty() => ToolOutcome::Success(value.clone()),
        _ => ToolOutcome::Text(text),
    };
    ToolOutput { outcome, media }
}

fn image(mime: &str, data: &str) -> Option<ContentPart> {
    let mime = if mime.is_empty() { "image/png" } else { mime };
    serde_json::from_value(json!({
        "type": "image_url",
        "image_url": {"url": format!("data:{mime};base64,{data}")}
    }))
    .ok()
}

fn audio(mime: &str, data: &str) -> Option<ContentPart> {
    let format = match mime.rsplit('/').next().unwrap_or("") {
        "mpeg" | "mp3" => "mp3",
        "" => "wav",
        "x-wav" | "wave" => "wav",
        other => other,
    };
    serde_json::from_value(json!({
        "type": "input_audio",
        "input_audio": {"data": data, "format": format}
    }))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_images_and_errors_map_to_the_seed_results() {
        let out = to_output(&result(json!({"content": [
            {"type": "text", "text": "order 7: shipped"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ]})));
        assert_eq!(out.outcome, ToolOutcome::Text("order 7: shipped".into()));
        let alone =
            json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]});
        assert_eq!(
            to_output(&result(alone)).outcome,
            ToolOutcome::Text("[image/png attached]".into())
        );
        assert_eq!(out.media.len(), 1);
        let part = serde_json::to_value(&out.media[0]).unwrap();
        assert_eq!(
            part["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
        let error = to_output(&result(json!({
            "content": [{"type": "text", "text": "no such order"}], "isError": true
        })));
        assert_eq!(
            error.outcome,
            ToolOutcome::Error {
                error_type: "McpToolError".into(),
                message: "no such order".into()
            }
        );
        let both = json!({
            "content": [{"type": "text", "text": "{\"n\": 1}"}], "structuredContent": {"n": 1}
        });
        assert_eq!(
            to_output(&result(both)).outcome,
            ToolOutcome::Text("{\"n\": 1}".into())
        );
        let only = json!({"content": [], "structuredContent": {"n": 1}});
        assert_eq!(
            to_output(&result(only)).outcome,
            ToolOutcome::Success(json!({"n": 1}))
        );
    }
}
