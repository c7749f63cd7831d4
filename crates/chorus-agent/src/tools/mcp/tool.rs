//! One tool of an MCP server, as the registry sees it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chorus_core::ToolDefinition;
use rmcp::model::Tool as ListedTool;
use serde_json::Value;

use super::names::mcp_tool_name;
use super::result::to_output;
use super::server::McpServer;
use crate::tools::{Tool, ToolOutput, definition};

/// A tool of an MCP server: named `<server>__<tool>`, with the description and input schema
/// the server lists; a call goes to the server under the tool's own name.
pub struct McpTool {
    server: Arc<McpServer>,
    /// The tool's name on the server.
    remote_name: String,
    definition: ToolDefinition,
    timeout: Duration,
    requires_confirmation: bool,
}

impl McpTool {
    /// The tool `listed` of `server`, with a timeout per call and whether each call needs a
    /// person's approval.
    pub fn new(
        server: Arc<McpServer>,
        listed: &ListedTool,
        timeout: Duration,
        requires_confirmation: bool,
    ) -> Self {
        let name = mcp_tool_name(server.name(), &listed.name);
        let parameters = Value::Object(listed.input_schema.as_ref().clone());
        McpTool {
            definition: definition(&name, listed.description.as_deref(), parameters),
            remote_name: listed.name.to_string(),
            server,
            timeout,
            requires_confirmation,
        }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn requires_confirmation(&self) -> bool {
        self.requires_confirmation
    }

    async fn call(&self, arguments: Value) -> ToolOutput {
        let Value::Object(arguments) = arguments else {
            return ToolOutput::error("InvalidArguments", "expected a JSON object of arguments");
        };
        match self
            .server
            .call(&self.remote_name, arguments, self.timeout)
            .await
        {
            Ok(result) => to_output(&result),
            Err(e) => ToolOutput::error(
                "McpUnavailable",
                format!(
                    "The MCP server `{}` did not run `{}`: {e}. Hint: try again later or use \
                     another tool.",
                    self.server.name(),
                    self.remote_name
                ),
            ),
        }
    }
}
