//! The names MCP tools get in the registry: `<server>__<tool>`, in the characters every model
//! API accepts for a function name.

/// The longest function name the OpenAI-compatible APIs accept.
const MAX_NAME: usize = 64;

/// True for a server name usable as a prefix: letters, digits, `_` and `-`, at most 32.
pub(super) fn is_server_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 32 && name.chars().all(allowed)
}

/// The registry name of the server's tool `tool`: `<server>__<tool>`, any character other
/// than ASCII letters, digits, `_` and `-` replaced by `_`, cut to 64 characters.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    format!("{server}__{tool}")
        .chars()
        .map(|c| if allowed(c) { c } else { '_' })
        .take(MAX_NAME)
        .collect()
}

fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_to_the_model_apis_characters_and_length() {
        assert_eq!(
            mcp_tool_name("orders", "lookup_order"),
            "orders__lookup_order"
        );
        assert_eq!(mcp_tool_name("fs", "read.file/v2"), "fs__read_file_v2");
        assert_eq!(mcp_tool_name("s", &"x".repeat(100)).len(), 64);
        assert!(is_server_name("orders-2") && !is_server_name("my server") && !is_server_name(""));
    }
}
