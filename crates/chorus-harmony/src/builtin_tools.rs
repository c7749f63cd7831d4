//! The built-in `browser` and `python` tool namespaces of the gpt-oss system message.
//!
//! Their texts are the ones gpt-oss was trained with; rendering must reproduce them exactly.

use serde_json::json;

use crate::model::{SystemContent, ToolDescription, ToolNamespaceConfig};

const BROWSER_DESCRIPTION: &str = "Tool for browsing.\nThe `cursor` appears in brackets before each browsing display: `[{cursor}]`.\nCite information from the tool using the following format:\n`【{cursor}†L{line_start}(-L{line_end})?】`, for example: `【6†L9-L11】` or `【8†L3】`.\nDo not quote more than 10 words directly from the tool output.\nsources=web (default: web)";

const BROWSER_OPEN: &str = "Opens the link `id` from the page indicated by `cursor` starting at line number `loc`, showing `num_lines` lines.\nValid link ids are displayed with the formatting: `【{id}†.*】`.\nIf `cursor` is not provided, the most recent page is implied.\nIf `id` is a string, it is treated as a fully qualified URL associated with `source`.\nIf `loc` is not provided, the viewport will be positioned at the beginning of the document or centered on the most relevant passage, if available.\nUse this function without `id` to scroll to a new location of an opened page.";

const PYTHON_DESCRIPTION: &str = "Use this tool to execute Python code in your chain of thought. The code will not be shown to the user. This tool should be used for internal reasoning, but not for code that is intended to be visible to the user (e.g. when creating plots, tables, or files).\n\nWhen you send a message containing Python code to python, it will be executed in a stateful Jupyter notebook environment. python will respond with the output of the execution or time out after 120.0 seconds. The drive at '/mnt/data' can be used to save and persist user files. Internet access for this session is UNKNOWN. Depends on the cluster.";

/// The `browser` namespace (`search`, `open`, `find`).
pub(crate) fn browser() -> ToolNamespaceConfig {
    let tool = |name: &str, description: &str, parameters| ToolDescription {
        name: name.to_string(),
        description: description.to_string(),
        parameters: Some(parameters),
    };
    ToolNamespaceConfig {
        name: "browser".to_string(),
        description: Some(BROWSER_DESCRIPTION.to_string()),
        tools: vec![
            tool(
                "search",
                "Searches for information related to `query` and displays `topn` results.",
                json!({"type": "object", "properties": {
                    "query": {"type": "string"},
                    "topn": {"type": "number", "default": 10},
                    "source": {"type": "string"}
                }, "required": ["query"]}),
            ),
            tool(
                "open",
                BROWSER_OPEN,
                json!({"type": "object", "properties": {
                    "id": {"type": ["number", "string"], "default": -1},
                    "cursor": {"type": "number", "default": -1},
                    "loc": {"type": "number", "default": -1},
                    "num_lines": {"type": "number", "default": -1},
                    "view_source": {"type": "boolean", "default": false},
                    "source": {"type": "string"}
                }}),
            ),
            tool(
                "find",
                "Finds exact matches of `pattern` in the current page, or the page given by `cursor`.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"},
                    "cursor": {"type": "number", "default": -1}
                }, "required": ["pattern"]}),
            ),
        ],
    }
}

/// The `python` namespace (no typed tools; its description is written as is).
pub(crate) fn python() -> ToolNamespaceConfig {
    ToolNamespaceConfig {
        name: "python".to_string(),
        description: Some(PYTHON_DESCRIPTION.to_string()),
        tools: Vec::new(),
    }
}

impl SystemContent {
    /// Adds (or replaces) a built-in tool namespace.
    pub fn with_tools(mut self, namespace: ToolNamespaceConfig) -> Self {
        self.tools
            .get_or_insert_with(Default::default)
            .insert(namespace.name.clone(), namespace);
        self
    }

    /// Adds the `browser` namespace.
    pub fn with_browser_tool(self) -> Self {
        self.with_tools(browser())
    }

    /// Adds the `python` namespace.
    pub fn with_python_tool(self) -> Self {
        self.with_tools(python())
    }
}
