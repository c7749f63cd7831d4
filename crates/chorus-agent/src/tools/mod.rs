//! Tools: a registry with JSON Schema parameters, validated arguments, seed-000 results.
//!
//! A [`Tool`] runs with arguments the [`ToolRegistry`] already parsed from the model's string and
//! validated against the tool's schema; anything that goes wrong before or during the call comes
//! back as the seed's error result (`status: error`, `error_type`, `message` with a hint) so the
//! model can repair its call. Built-in kinds: [`HttpTool`], [`CommandTool`] and [`FunctionTool`]
//! (a typed Rust function whose schema is derived with schemars), and with the `mcp` feature
//! the tools of MCP servers (`McpTool`, through an `McpServer` connection).

/// The builder methods (`with_timeout`, `with_confirmation`) and the [`Tool`] impl of a tool
/// kind with fields `definition`, `timeout` and `requires_confirmation` and a method
/// `execute(&self, &Value) -> Result<ToolOutput, ToolOutput>` (the `http` and `command` kinds).
macro_rules! configured_tool {
    ($kind:ty) => {
        impl $kind {
            /// The same tool with a timeout per call.
            pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
                self.timeout = timeout;
                self
            }

            /// The same tool, marked as needing a person's approval for each call.
            pub fn with_confirmation(mut self, required: bool) -> Self {
                self.requires_confirmation = required;
                self
            }
        }

        #[async_trait::async_trait]
        impl $crate::tools::Tool for $kind {
            fn definition(&self) -> chorus_core::ToolDefinition {
                self.definition.clone()
            }

            fn requires_confirmation(&self) -> bool {
                self.requires_confirmation
            }

            async fn call(&self, arguments: serde_json::Value) -> $crate::tools::ToolOutput {
                self.execute(&arguments).await.unwrap_or_else(|e| e)
            }
        }
    };
}

mod command;
mod function;
mod http;
mod mcp;
mod registry;
mod spec;
mod template;

pub use command::CommandTool;
pub use function::FunctionTool;
pub use http::HttpTool;
#[cfg(feature = "mcp")]
pub use mcp::{McpEndpoint, McpServer, McpTool};
pub use mcp::{McpToolSpec, mcp_tool_name};
pub use registry::{RegistryError, ToolRegistry, confirmation_id};
pub use spec::{CommandToolSpec, HttpToolSpec, ToolKind, ToolSpec, ToolSpecError};
pub use template::{TemplateError, percent_encode, render as render_template};

use async_trait::async_trait;
use chorus_core::{Content, ContentPart, Message, Nullable, Role, ToolDefinition, ToolOutcome};
use serde_json::Value;

/// What a tool produced: its seed-000 outcome and any media (multimodal results).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// Success, error (for self-repair) or halted (waiting for a person).
    pub outcome: ToolOutcome,
    /// Images or audio that go with the result.
    pub media: Vec<ContentPart>,
}

impl ToolOutput {
    /// A successful result with a JSON value.
    pub fn success(value: Value) -> Self {
        ToolOutput {
            outcome: ToolOutcome::Success(value),
            media: Vec::new(),
        }
    }

    /// The seed's error result: a machine-readable class and a message that says how to fix it.
    pub fn error(error_type: impl Into<String>, message: impl Into<String>) -> Self {
        ToolOutput {
            outcome: ToolOutcome::Error {
                error_type: error_type.into(),
                message: message.into(),
            },
            media: Vec::new(),
        }
    }

    /// The seed's halted result: the tool did not run and waits for a person.
    pub fn halted(reason: impl Into<String>, message: impl Into<String>) -> Self {
        ToolOutput {
            outcome: ToolOutcome::Halted {
                reason: reason.into(),
                message: message.into(),
            },
            media: Vec::new(),
        }
    }

    /// The same output with media attached.
    pub fn with_media(mut self, media: Vec<ContentPart>) -> Self {
        self.media = media;
        self
    }

    /// True for an error result.
    pub fn is_error(&self) -> bool {
        matches!(self.outcome, ToolOutcome::Error { .. })
    }

    /// The tool message answering `call_id`: the outcome's JSON text, then any media parts.
    pub fn to_message(&self, call_id: &str, tool: &str) -> Message {
        let text = self.outcome.to_text();
        let mut message = if self.media.is_empty() {
            Message::new(Role::Tool, text)
        } else {
            let mut parts = vec![ContentPart::text(text)];
            parts.extend(self.media.iter().cloned());
            Message {
                content: Nullable::Value(Content::Parts(parts)),
                ..Message::new(Role::Tool, "")
            }
        };
        message.tool_call_id = Some(call_id.to_owned());
        message.name = Some(tool.to_owned());
        message
    }
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

/// A function tool definition from its parts.
pub fn definition(name: &str, description: Option<&str>, parameters: Value) -> ToolDefinition {
    ToolDefinition {
        kind: Some("function".into()),
        function: chorus_core::FunctionDefinition {
            name: name.to_owned(),
            description: description.map(str::to_owned),
            parameters: Some(parameters),
            strict: None,
            extra: Default::default(),
        },
        extra: Default::default(),
        given: None,
    }
}
