//! Tools declared in a flow file (`[[tools]]`): the options every tool has, and its kind's.

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::mcp::McpToolSpec;
use super::{CommandTool, HttpTool, Tool, definition};

/// One `[[tools]]` entry of a flow file (read with `FlowSpec::parse`, which puts the options of
/// the entry's kind under `kind`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// JSON Schema of the arguments object (default: an object with any properties).
    #[serde(default)]
    pub parameters: Option<Value>,
    /// Whether a person must approve each call.
    #[serde(default)]
    pub requires_confirmation: bool,
    /// Timeout per call in milliseconds (default 30 000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Whether running a call twice does no harm (default true). A call of a tool with
    /// `idempotent = false` that may have run (a worker stopped during it) is not run again
    /// without a person's approval.
    #[serde(default = "yes")]
    pub idempotent: bool,
    /// `kind = "http"`, `"command"` or `"mcp"`, and the options of that kind.
    pub kind: ToolKind,
}

impl ToolSpec {
    /// The keys of the fields above other than `kind`: every tool takes them whatever its kind.
    /// A field added above without its key here is refused in every flow file, so a test that
    /// uses it fails at once.
    pub(crate) const SHARED_KEYS: &[&str] = &[
        "name",
        "description",
        "parameters",
        "requires_confirmation",
        "timeout_ms",
        "idempotent",
    ];
}

fn yes() -> bool {
    true
}

/// What a tool does, by its `kind`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// An HTTP request.
    Http(HttpToolSpec),
    /// A program run without a shell.
    Command(CommandToolSpec),
    /// An MCP server: every tool it lists, named `<name>__<tool>` (feature `mcp`).
    Mcp(McpToolSpec),
}

/// The options of a `kind = "http"` tool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpToolSpec {
    /// The URL template.
    pub url: String,
    /// The method (default GET).
    #[serde(default)]
    pub method: Option<String>,
    /// Header templates.
    #[serde(default)]
    pub headers: IndexMap<String, String>,
}

/// The options of a `kind = "command"` tool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandToolSpec {
    /// The executable.
    pub program: String,
    /// Argument templates.
    #[serde(default)]
    pub args: Vec<String>,
}

/// A tool entry that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool `{tool}`: {message}")]
pub struct ToolSpecError {
    /// The tool's name.
    pub tool: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl ToolSpec {
    /// True when a call of some tool of this entry may need a person's approval.
    pub fn may_require_confirmation(&self) -> bool {
        self.requires_confirmation
            || matches!(&self.kind, ToolKind::Mcp(mcp) if !mcp.confirm.is_empty())
    }

    /// Builds the entry's tools: one, or for `kind = "mcp"` every tool the server lists (the
    /// server is connected to now and stays connected while a tool holds it).
    pub fn build_all(&self) -> Result<Vec<Arc<dyn Tool>>, ToolSpecError> {
        match &self.kind {
            ToolKind::Mcp(mcp) => {
                let fail = |message: String| ToolSpecError {
                    tool: self.name.clone(),
                    message,
                };
                if self.description.is_some() || self.parameters.is_some() {
                    return Err(fail(
                        "an mcp entry takes its tools' descriptions and parameters from the \
                         server; remove `description` and `parameters`"
                            .into(),
                    ));
                }
                let timeout = Duration::from_millis(self.timeout_ms.unwrap_or(30_000));
                super::mcp::build(&self.name, mcp, self.requires_confirmation, timeout)
                    .map_err(fail)
            }
            _ => Ok(vec![self.build()?]),
        }
    }

    /// Builds the tool of an `http` or `command` entry (an `mcp` entry has many: [`Self::build_all`]).
    pub fn build(&self) -> Result<Arc<dyn Tool>, ToolSpecError> {
        let parameters = self
            .parameters
            .clone()
            .unwrap_or_else(|| json!({"type": "object"}));
        let definition = definition(&self.name, self.description.as_deref(), parameters);
        let timeout = Duration::from_millis(self.timeout_ms.unwrap_or(30_000));
        let tool: Arc<dyn Tool> = match &self.kind {
            ToolKind::Http(http) => {
                let method = http.method.as_deref().unwrap_or("GET");
                let tool = HttpTool::new(definition, method, http.url.clone())
                    .map_err(|message| ToolSpecError {
                        tool: self.name.clone(),
                        message,
                    })?
                    .with_headers(http.headers.clone())
                    .with_timeout(timeout)
                    .with_confirmation(self.requires_confirmation);
                Arc::new(tool)
            }
            ToolKind::Command(command) => {
                let tool =
                    CommandTool::new(definition, command.program.clone(), command.args.clone())
                        .with_timeout(timeout)
                        .with_confirmation(self.requires_confirmation);
                Arc::new(tool)
            }
            ToolKind::Mcp(_) => {
                return Err(ToolSpecError {
                    tool: self.name.clone(),
                    message:
                        "an mcp entry names a server with many tools; build it with `build_all`"
                            .into(),
                });
            }
        };
        Ok(tool)
    }
}
