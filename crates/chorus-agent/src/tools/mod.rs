//! Tools: a registry with JSON Schema parameters, validated arguments, seed-000 results.

use async_trait::async_trait;
use chorus_core::{ContentPart, ToolDefinition, ToolOutcome};
use serde_json::Value;

/// What a tool produced: its seed-000 outcome and any media (multimodal results).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Success, error (for self-repair) or halted (waiting for a person).
    pub outcome: ToolOutcome,
    /// Images or audio that go with the result.
    pub media: Vec<ContentPart>,
}

/// Something a model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name, description and parameter schema, as the model sees them.
    fn definition(&self) -> ToolDefinition;

    /// Whether a person must approve each call before it runs.
    fn requires_confirmation(&self) -> bool {
        false
    }

    /// Runs the tool with arguments already validated against its schema.
    async fn call(&self, arguments: Value) -> ToolOutput;
}
