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

pub use names::mcp_tool_name;
#[cfg(feature = "mcp")]
pub use server::{McpEndpoint, McpServer};
#[cfg(feature = "mcp")]
pub use tool::McpTool;

use super::Tool;
use super::spec::{McpToolSpec, ToolSpec, ToolSpecError};

/// Checks the options of an `mcp` entry, connects to its server and builds one tool per tool
/// the server lists.
pub(super) fn build(
    spec: &ToolSpec,
    mcp: &McpToolSpec,
) -> Result<Vec<Arc<dyn Tool>>, ToolSpecError> {
    let fail = |message: String| ToolSpecError {
        tool: spec.name.clone(),
        message,
    };
    if !names::is_server_name(&spec.name) {
        return Err(fail(format!(
            "expected the MCP server's name (it prefixes its tools' names) of letters, digits, `_` \
             and `-`, found {:?}",
            spec.name
        )));
    }
    if spec.description.is_some() || spec.parameters.is_some() {
        return Err(fail(
            "an mcp entry takes its tools' descriptions and parameters from the server; remove \
             `description` and `parameters`"
                .into(),
        ));
    }
    match (&mcp.command, &mcp.url) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(fail(
                "expected exactly one of `command` (a server on standard input and output) and \
                 `url` (a streamable HTTP server)"
                    .into(),
            ));
        }
        (None, Some(url)) if !url.starts_with("http://") => {
            return Err(fail(format!(
                "expected an http:// URL, found {url:?}; this chorus speaks MCP over plain HTTP \
                 only (no TLS yet): reach an https server through a local proxy"
            )));
        }
        (None, Some(_)) if !mcp.args.is_empty() || !mcp.env.is_empty() => {
            return Err(fail(
                "`args` and `env` go with `command`; a `url` server takes neither".into(),
            ));
        }
        _ => {}
    }
    connect(spec, mcp).map_err(fail)
}

#[cfg(feature = "mcp")]
fn connect(spec: &ToolSpec, mcp: &McpToolSpec) -> Result<Vec<Arc<dyn Tool>>, String> {
    use std::time::Duration;

    let endpoint = match (&mcp.command, &mcp.url) {
        (Some(program), _) => McpEndpoint::Command {
            program: program.clone(),
            args: mcp.args.clone(),
            env: mcp.env.clone(),
        },
        (None, Some(url)) => McpEndpoint::Url(url.clone()),
        (None, None) => unreachable!("checked by build"),
    };
    let connect_timeout = Duration::from_millis(mcp.connect_timeout_ms.unwrap_or(30_000));
    let (server, listed) = McpServer::connect(&spec.name, endpoint, connect_timeout)?;
    let offered: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    if let Some(missing) = mcp.confirm.iter().find(|c| !offered.contains(&c.as_str())) {
        return Err(format!(
            "`confirm` names {missing:?}, which the server does not list; it lists: {}",
            offered.join(", ")
        ));
    }
    let call_timeout = Duration::from_millis(spec.timeout_ms.unwrap_or(30_000));
    Ok(listed
        .into_iter()
        .map(|listed| {
            let confirm =
                spec.requires_confirmation || mcp.confirm.iter().any(|c| *c == listed.name);
            Arc::new(McpTool::new(server.clone(), &listed, call_timeout, confirm)) as Arc<dyn Tool>
        })
        .collect())
}

#[cfg(not(feature = "mcp"))]
fn connect(_: &ToolSpec, _: &McpToolSpec) -> Result<Vec<Arc<dyn Tool>>, String> {
    Err(
        "this chorus was built without MCP support; build it with the cargo feature `mcp` \
         (chorus-cli has it by default)"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use crate::flow::FlowSpec;

    /// The message of building the one tool entry whose options are `options`.
    fn refused(options: &str) -> String {
        let text = format!(
            "name = \"x\"\n[input]\ntext = \"hi\"\n[[tools]]\nkind = \"mcp\"\n{options}\n\
             [[agents]]\nname = \"a\"\nkind = \"rule\"\n[[agents.rules]]\n"
        );
        let spec = FlowSpec::parse(&text).unwrap();
        match spec.tools[0].build_all() {
            Ok(_) => panic!("built {options}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn options_that_cannot_work_are_refused_before_connecting() {
        let both = refused("name = \"s\"\ncommand = \"p\"\nurl = \"http://h/mcp\"");
        assert!(both.contains("exactly one of `command`"), "{both}");
        let neither = refused("name = \"s\"");
        assert!(neither.contains("exactly one of `command`"), "{neither}");
        let https = refused("name = \"s\"\nurl = \"https://h/mcp\"");
        assert!(https.contains("expected an http:// URL"), "{https}");
        let named = refused("name = \"my server\"\ncommand = \"p\"");
        assert!(named.contains("letters, digits"), "{named}");
        let described = refused("name = \"s\"\ncommand = \"p\"\ndescription = \"d\"");
        assert!(described.contains("remove `description`"), "{described}");
    }
}
