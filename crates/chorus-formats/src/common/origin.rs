//! Provider blocks chorus has no type for: kept as `Other` parts (or items) marked with the
//! format they came from, so that only that format writes them back.

use serde_json::{Map, Value};

use crate::format::Format;

/// The key that marks a part decoded from a provider block chorus has no type for.
pub const ORIGIN: &str = "x-format";

/// A copy of `block`, marked as decoded from `format`.
pub fn marked(block: &Map<String, Value>, format: Format) -> Map<String, Value> {
    let mut out = block.clone();
    out.insert(ORIGIN.into(), Value::String(format.id().into()));
    out
}

/// The id of the format a kept block came from, if it is marked.
pub fn origin(block: &Map<String, Value>) -> Option<&str> {
    block.get(ORIGIN).and_then(Value::as_str)
}

/// Whether `block` was decoded from `format`.
pub fn is_from(block: &Map<String, Value>, format: Format) -> bool {
    origin(block) == Some(format.id())
}

/// A copy of `block` without its mark, as its format wrote it.
pub fn unmarked(block: &Map<String, Value>) -> Map<String, Value> {
    let mut out = block.clone();
    out.remove(ORIGIN);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_marked_block_names_its_format_and_comes_back_unmarked() {
        let Value::Object(block) = json!({"type": "server_tool_use", "id": "s1"}) else {
            unreachable!()
        };
        let kept = marked(&block, Format::Anthropic);
        assert_eq!(origin(&kept), Some("anthropic"));
        assert!(is_from(&kept, Format::Anthropic));
        assert!(!is_from(&kept, Format::Gemini));
        assert!(!is_from(&block, Format::Anthropic));
        assert_eq!(unmarked(&kept), block);
    }
}
