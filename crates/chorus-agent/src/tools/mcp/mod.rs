//! The `mcp` tool kind: the tools of an MCP server (stdio child process or streamable HTTP),
//! each named `<entry name>__<tool name>` so that two servers' tools never clash.
//!
//! The server is connected to when the flow is built ([`McpServer::connect`]); its tools join
//! the registry with the descriptions and input schemas it lists, so the registry validates
//! arguments and applies confirmation to them like to any tool. Results map to seed-000 results:
//! text content as text, images and audio as media parts of the tool message, `isError` as an
//! error result (`McpToolError`). Without the `mcp` cargo feature an `mcp` entry is refused when
//! the flow is built.

mod names;
#[cfg(feature = "mcp")]
mod result;
#[cfg(feature = "mcp")]
mod server;
#[cfg(feature = "mcp")]
mod tool;

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use serde::Deserialize;

pub use names::mcp_tool_name;
#[cfg(feature = "mcp")]
pub use server::{McpEndpoint, McpServer};
#[cfg(feature = "mcp")]
pub use tool::McpTool;

use super::Tool;

/// The options of a `kind = "mcp"` entry: one MCP server, reached through `command` (stdio) or
/// `url` (streamable HTTP), whose tools all join the registry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpToolSpec {
    /// The server's program, started without a shell; it speaks MCP on its standard input and
    /// output.
    #[serde(default)]
    pub command: Option<String>,
    /// The program's arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for the program. It gets no other variable of chorus's
    /// environment than `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and `USER` (as the official
    /// MCP SDKs start servers) and those `inherit_env` names.
    #[serde(default)]
    pub env: IndexMap<String, String>,
    /// Names of chorus's environment variables the program also gets (`["OPENAI_API_KEY"]`);
    /// one that is not set is left out.
    #[serde(default)]
    pub inherit_env: Vec<String>,
    /// The streamable HTTP endpoint (`http://host:port/mcp`).
    #[serde(default)]
    pub url: Option<String>,
    /// The server's tools (their MCP names) that need a person's approval for each call.
    #[serde(default)]
    pub confirm: Vec<String>,
    /// How long connecting and listing the tools may take, in milliseconds (default 30 000).
    #[serde(default)]
    pub connect_timeout_ms: Option<u64>,
}

/// Checks the options of the `mcp` entry `name`, connects to its server and builds one tool per
/// tool the server lists; `confirm_all` marks every one as needing approval, `call_timeout`
/// bounds each call.
pub(super) fn build(
    name: &str,
    mcp: &McpToolSpec,
    confirm_all: bool,
    call_timeout: Duration,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    if !names::is_server_name(name) {
        return Err(format!(
            "expected the MCP server's name (it prefixes its tools' names) of letters, digits, `_` \
             and `-`, at most 32, found {name:?}"
        ));
    }
    match (&mcp.command, &mcp.url) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(
                "expected exactly one of `command` (a server on standard input and \
                        output) and `url` (a streamable HTTP server)"
                    .into(),
            );
        }
        (None, Some(url)) if !url.starts_with("http://") => {
            return Err(format!(
                "expected an http:// URL, found {url:?}; this chorus speaks MCP over plain HTTP \
                 only (no TLS yet): reach an https server through a local proxy"
            ));
        }
        (None, Some(_))
            if !mcp.args.is_empty() || !mcp.env.is_empty() || !mcp.inherit_env.is_empty() =>
        {
            return Err(
                "`args`, `env` and `inherit_env` go with `command`; a `url` server takes none of them"
                    .into(),
            );
        }
        _ => {}
    }
    connect(name, mcp, confirm_all, call_timeout)
}

#[cfg(feature = "mcp")]
fn connect(
    name: &str,
    mcp: &McpToolSpec,
    confirm_all: bool,
    call_timeout: Duration,
) -> Result<Vec<Arc<dyn Tool>>, String> {
    let endpoint = match (&mcp.command, &mcp.url) {
        (Some(program), _) => McpEndpoint::Command {
            program: program.clone(),
            args: mcp.args.clone(),
            env: mcp.env.clone(),
            inherit_env: mcp.inherit_env.clone(),
        },
        (None, Some(url)) => McpEndpoint::Url(url.clone()),
        (None, None) => unreachable!("checked by build"),
    };
    let connect_timeout = Duration::from_millis(mcp.connect_timeout_ms.unwrap_or(30_000));
    let (server, listed) = McpServer::connect(name, endpoint, connect_timeout)?;
    let offered: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    if let Some(missing) = mcp.confirm.iter().find(|c| !offered.contains(&c.as_str())) {
        return Err(format!(
            "`confirm` names {missing:?}, which the server does not list; it lists: {}",
            offered.join(", ")
        ));
    }
    Ok(listed
        .into_iter()
        .map(|listed| {
            let confirm = confirm_all || mcp.confirm.iter().any(|c| *c == listed.name);
            Arc::new(McpTool::new(server.clone(), &listed, call_timeout, confirm)) as Arc<dyn Tool>
        })
        .collect())
}

#[cfg(not(feature = "mcp"))]
fn connect(_: &str, _: &McpToolSpec, _: bool, _: Duration) -> Result<Vec<Arc<dyn Tool>>, String> {
    Err(
        "this chorus was built without MCP support; build it with the cargo feature `mcp` \
         (chorus-cli has it by default)"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of building an entry named `name` with `options`.
    fn refused(name: &str, options: McpToolSpec) -> String {
        match build(name, &options, false, Duration::from_secs(1)) {
            Ok(_) => panic!("built {options:?}"),
            Err(e) => e,
        }
    }

    fn options(command: Option<&str>, url: Option<&str>) -> McpToolSpec {
        McpToolSpec {
            command: command.map(str::to_owned),
            args: Vec::new(),
            env: IndexMap::new(),
            inherit_env: Vec::new(),
            url: url.map(str::to_owned),
            confirm: Vec::new(),
            connect_timeout_ms: None,
        }
    }

    #[test]
    fn options_that_cannot_work_are_refused_before_connecting() {
        let both = refused("s", options(Some("p"), Some("http://h/mcp")));
        assert!(both.contains("exactly one of `command`"), "{both}");
        let neither = refused("s", options(None, None));
        assert!(neither.contains("exactly one of `command`"), "{neither}");
        let https = refused("s", options(None, Some("https://h/mcp")));
        assert!(https.contains("expected an http:// URL"), "{https}");
        let mut with_args = options(None, Some("http://h/mcp"));
        with_args.args = vec!["x".into()];
        assert!(
            refused("s", with_args).contains("`args`, `env` and `inherit_env` go with `command`")
        );
        let named = refused("my server", options(Some("p"), None));
        assert!(named.contains("letters, digits"), "{named}");
    }
}
