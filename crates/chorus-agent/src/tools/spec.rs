//! Tools declared in a flow file (`[[tools]]`): `http` and `command` kinds.

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CommandTool, HttpTool, Tool, definition};

/// One `[[tools]]` entry of a flow file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name the model calls.
    pub name: String,
    /// `http` or `command`.
    pub kind: String,
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
    /// `http`: the URL template.
    #[serde(default)]
    pub url: Option<String>,
    /// `http`: the method (default GET).
    #[serde(default)]
    pub method: Option<String>,
    /// `http`: header templates.
    #[serde(default)]
    pub headers: IndexMap<String, String>,
    /// `command`: the executable.
    #[serde(default)]
    pub program: Option<String>,
    /// `command`: argument templates.
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
    /// Builds the tool.
    pub fn build(&self) -> Result<Arc<dyn Tool>, ToolSpecError> {
        let fail = |message: String| ToolSpecError {
            tool: self.name.clone(),
            message,
        };
        let parameters = self
            .parameters
            .clone()
            .unwrap_or_else(|| json!({"type": "object"}));
        let definition = definition(&self.name, self.description.as_deref(), parameters);
        let timeout = Duration::from_millis(self.timeout_ms.unwrap_or(30_000));
        match self.kind.as_str() {
            "http" => {
                let url = self
                    .url
                    .clone()
                    .ok_or_else(|| fail("kind `http` needs `url`".into()))?;
                let tool = HttpTool::new(definition, self.method.as_deref().unwrap_or("GET"), url)
                    .map_err(fail)?
                    .with_headers(self.headers.clone())
                    .with_timeout(timeout)
                    .with_confirmation(self.requires_confirmation);
                Ok(Arc::new(tool))
            }
            "command" => {
                let program = self
                    .program
                    .clone()
                    .ok_or_else(|| fail("kind `command` needs `program`".into()))?;
                let tool = CommandTool::new(definition, program, self.args.clone())
                    .with_timeout(timeout)
                    .with_confirmation(self.requires_confirmation);
                Ok(Arc::new(tool))
            }
            other => Err(fail(format!(
                "expected kind `http` or `command`, found {other:?}"
            ))),
        }
    }
}
