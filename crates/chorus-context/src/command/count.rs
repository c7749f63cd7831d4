//! `chorus count`: the token count of a conversation, per message and by category.

use crate::count::TokenCounter;
use crate::media::CostTable;

use super::CommandError;
use super::input::{InputFormat, read_conversation};

/// Arguments of `chorus count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountArgs {
    /// Model name, or `approximate`.
    pub model: String,
    /// Input format.
    pub from: InputFormat,
    /// A JSON overlay for the media cost table.
    pub costs: Option<String>,
    /// Whether image parts may name local files.
    pub read_files: bool,
}

/// `{"total", "messages", "breakdown"}` for the conversation in `text`.
pub fn count(text: &str, args: &CountArgs) -> Result<serde_json::Value, CommandError> {
    let input = read_conversation(text, args.from)?;
    let table = match &args.costs {
        Some(overlay) => CostTable::with_overlay(overlay)?,
        None => CostTable::default(),
    };
    let counter = TokenCounter::with_table(&args.model, &table)?.read_local_files(args.read_files);
    let count = counter.count_conversation(&input.conversation)?;
    Ok(serde_json::to_value(count).unwrap_or_default())
}
