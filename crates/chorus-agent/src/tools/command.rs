//! The `command` tool kind: an executable with argument templates, a timeout and no shell.

use std::process::Stdio;
use std::time::Duration;

use chorus_core::ToolDefinition;
use serde_json::{Value, json};

use super::{ToolOutput, template};

/// Runs a program directly (never through a shell); `{arg}` placeholders in its arguments are
/// filled as given. Standard output is the result; a nonzero exit is an error result.
pub struct CommandTool {
    definition: ToolDefinition,
    program: String,
    args: Vec<String>,
    timeout: Duration,
    requires_confirmation: bool,
}

impl CommandTool {
    /// A tool running `program` with argument templates `args`.
    pub fn new(definition: ToolDefinition, program: impl Into<String>, args: Vec<String>) -> Self {
        CommandTool {
            definition,
            program: program.into(),
            args,
            timeout: Duration::from_secs(30),
            requires_confirmation: false,
        }
    }

    async fn execute(&self, arguments: &Value) -> Result<ToolOutput, ToolOutput> {
        let args = self
            .args
            .iter()
            .map(|a| template::render(a, arguments, false))
            .collect::<Result<Vec<_>, _>>()?;
        let child = tokio::process::Command::new(&self.program)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                ToolOutput::error(
                    "CommandNotStarted",
                    format!("`{}` could not be started: {e}.", self.program),
                )
            })?;
        let output = tokio::time::timeout(self.timeout, child.wait_with_output())
            .await
            .map_err(|_| {
                ToolOutput::error(
                    "Timeout",
                    format!(
                        "The command did not finish within {} ms and was stopped. Hint: narrow the request.",
                        self.timeout.as_millis()
                    ),
                )
            })?
            .map_err(|e| ToolOutput::error("CommandFailed", e.to_string()))?;
        let stdout = String::from_utf8_lossy(&output.stdout)
            .trim_end()
            .to_owned();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let excerpt: String = stderr.trim().chars().take(500).collect();
            let code = output
                .status
                .code()
                .map_or("a signal".to_owned(), |c| format!("code {c}"));
            return Err(ToolOutput::error(
                "CommandFailed",
                format!(
                    "The command exited with {code}: {excerpt}. Hint: check the arguments and call again."
                ),
            ));
        }
        Ok(match serde_json::from_str::<Value>(&stdout) {
            Ok(value @ Value::Object(_)) => ToolOutput::success(value),
            _ => ToolOutput::success(json!({"status": "success", "output": stdout})),
        })
    }
}

configured_tool!(CommandTool);
