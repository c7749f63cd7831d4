//! One connection to an MCP server, kept on a thread of its own.
//!
//! Flows are built outside any async runtime (and tests build them inside one), so the
//! connection cannot belong to the caller's runtime: [`McpServer::connect`] starts a thread with
//! a one-thread tokio runtime that connects, lists the tools and then keeps the rmcp service
//! running. Calls go to it through rmcp's `Peer` (channels, usable from any runtime). Dropping
//! the last [`McpServer`] handle ends the service: the child process of a stdio server is
//! stopped, an HTTP session is closed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indexmap::IndexMap;
use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool as ListedTool};
use rmcp::service::{Peer, RoleClient, RunningService, ServiceExt};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

/// The last lines of a stdio server's standard error kept for messages.
const STDERR_LINES: usize = 20;

/// Where an MCP server is.
#[derive(Debug, Clone)]
pub enum McpEndpoint {
    /// A program speaking MCP on its standard input and output, run without a shell.
    Command {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set for it.
        env: IndexMap<String, String>,
        /// Names of chorus's environment variables it also gets.
        inherit_env: Vec<String>,
    },
    /// A streamable HTTP endpoint.
    Url(String),
}

/// A connected MCP server; tools hold it, and it is closed when the last handle is dropped.
pub struct McpServer {
    name: String,
    peer: Peer<RoleClient>,
    /// Dropping it (with the server) tells the connection's thread to close the service.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .finish()
    }
}

type Connected = (Peer<RoleClient>, Vec<ListedTool>);

impl McpServer {
    /// Connects to the server named `name` (the name is for messages) and lists its tools,
    /// waiting at most `timeout`. Blocks the calling thread.
    pub fn connect(
        name: &str,
        endpoint: McpEndpoint,
        timeout: Duration,
    ) -> Result<(Arc<McpServer>, Vec<ListedTool>), String> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<Connected, String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread_name = format!("mcp-{name}");
        std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("cannot start a runtime: {e}")));
                        return;
                    }
                };
                runtime.block_on(serve(endpoint, timeout, ready_tx, stop_rx));
            })
            .map_err(|e| format!("cannot start a thread for the MCP server: {e}"))?;
        // The thread answers within `timeout` (its own limit); the margin covers its start.
        let (peer, tools) = ready_rx
            .recv_timeout(timeout + Duration::from_secs(5))
            .map_err(|_| {
                format!(
                    "the MCP server did not answer within {} ms",
                    timeout.as_millis()
                )
            })??;
        let server = McpServer {
            name: name.to_owned(),
            peer,
            _stop: stop_tx,
        };
        Ok((Arc::new(server), tools))
    }

    /// The server's name (the flow file's entry name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Calls the server's tool `tool` (its MCP name) with `arguments`, waiting at most `timeout`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        timeout: Duration,
    ) -> Result<CallToolResult, String> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        match tokio::time::timeout(timeout, self.peer.call_tool(params)).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} ms", timeout.as_millis())),
        }
    }
}

/// The connection's life on its thread: connect and list (reporting on `ready`), then keep
/// the service until `stop` resolves (its sender dropped), then close it.
async fn serve(
    endpoint: McpEndpoint,
    timeout: Duration,
    ready: std::sync::mpsc::Sender<Result<Connected, String>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
    let started = tokio::time::timeout(timeout, start(endpoint, stderr_tail.clone())).await;
    let service = match started {
        Ok(Ok(service)) => service,
        Ok(Err(e)) => {
            // Give a server that exited a moment to have its last words read.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let _ = ready.send(Err(with_stderr(e, &stderr_tail)));
            return;
        }
        Err(_) => {
            let e = format!("no answer within {} ms", timeout.as_millis());
            let _ = ready.send(Err(with_stderr(e, &stderr_tail)));
            return;
        }
    };
    let listed = tokio::time::timeout(timeout, service.peer().list_all_tools()).await;
    let tools = match listed {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => {
            let _ = ready.send(Err(format!("listing its tools failed: {e}")));
            return;
        }
        Err(_) => {
            let e = format!(
                "listing its tools took more than {} ms",
                timeout.as_millis()
            );
            let _ = ready.send(Err(e));
            return;
        }
    };
    if ready.send(Ok((service.peer().clone(), tools))).is_err() {
        return;
    }
    let _ = stop.await;
    let _ = service.cancel().await;
}

/// The variables of chorus's environment every stdio server gets: those the official MCP SDKs
/// pass by default on POSIX systems. API keys and tokens in chorus's environment stay there.
const SAFE_ENV: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// The command of a stdio server: its program and arguments, an environment of [`SAFE_ENV`],
/// the variables `inherit` names and `env`, nothing else.
fn child_command(
    program: &str,
    args: &[String],
    env: &IndexMap<String, String>,
    inherit: &[String],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command.args(args).env_clear().kill_on_drop(true);
    let passed = SAFE_ENV
        .iter()
        .copied()
        .chain(inherit.iter().map(String::as_str));
    for name in passed {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(env);
    command
}

/// Starts the transport and the MCP session (initialize).
async fn start(
    endpoint: McpEndpoint,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
) -> Result<RunningService<RoleClient, ()>, String> {
    match endpoint {
        McpEndpoint::Command {
            program,
            args,
            env,
            inherit_env,
        } => {
            let command = child_command(&program, &args, &env, &inherit_env);
            let (transport, stderr) = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|e| format!("`{program}` could not be started: {e}"))?;
            if let Some(stderr) = stderr {
                tokio::spawn(keep_tail(stderr, stderr_tail));
            }
            ().serve(transport)
                .await
                .map_err(|e| format!("`{program}` did not start an MCP session: {e}"))
        }
        McpEndpoint::Url(url) => {
            // rmcp's HTTP client is reqwest 0.13, which (with the OTLP exporter's
            // `rustls-no-provider` in the same build) panics when built without a process-wide
            // rustls provider: ring, as everywhere in chorus (an error means one is installed).
            let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
            let transport = StreamableHttpClientTransport::from_uri(url.clone());
            ().serve(transport)
                .await
                .map_err(|e| format!("{url} did not start an MCP session: {e}"))
        }
    }
}

/// Reads a server's standard error, logging each line and keeping the last ones.
async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "chorus_agent::mcp", "{line}");
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == STDERR_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

fn with_stderr(message: String, tail: &Mutex<VecDeque<String>>) -> String {
    let tail = tail.lock().unwrap_or_else(|e| e.into_inner());
    if tail.is_empty() {
        message
    } else {
        let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
        format!(
            "{message}; its standard error ended with:\n{}",
            lines.join("\n")
        )
    }
}

#[cfg(test)]
mod env_tests {
    use super::*;

    /// A server sees the safe variables, those named, those set, and none of the rest (cargo
    /// sets `CARGO_MANIFEST_DIR` and `CARGO_PKG_NAME` in this test's environment).
    #[tokio::test]
    async fn a_stdio_server_gets_only_a_safe_environment() {
        let env = IndexMap::from([("CHORUS_SET".to_owned(), "yes".to_owned())]);
        let inherit = vec![
            "CARGO_PKG_NAME".to_owned(),
            "CHORUS_NOT_SET_ANYWHERE".to_owned(),
        ];
        let output = child_command("env", &[], &env, &inherit)
            .output()
            .await
            .expect("env runs");
        let text = String::from_utf8(output.stdout).unwrap();
        let names: Vec<&str> = text.lines().filter_map(|l| l.split('=').next()).collect();
        assert!(
            std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
            "the canary is set here"
        );
        assert!(!names.contains(&"CARGO_MANIFEST_DIR"), "{text}");
        assert!(names.contains(&"PATH"), "{text}");
        assert!(
            names.contains(&"CARGO_PKG_NAME"),
            "named in inherit_env: {text}"
        );
        assert!(text.lines().any(|l| l == "CHORUS_SET=yes"), "{text}");
        assert!(!names.contains(&"CHORUS_NOT_SET_ANYWHERE"), "{text}");
        for name in &names {
            assert!(
                SAFE_ENV.contains(name) || ["CARGO_PKG_NAME", "CHORUS_SET"].contains(name),
                "{name} reached the server: {text}"
            );
        }
    }
}
