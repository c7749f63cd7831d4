//! `chorus count`: the token count of a conversation, per message and by category.

use chorus_core::Conversation;

use super::CommandError;
use crate::count::{ConversationCount, TokenCounter};
use crate::media::CostTable;

/// Arguments of `chorus count`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountArgs {
    /// Model name, or `approximate`.
    pub model: String,
    /// A JSON overlay for the media cost table.
    pub costs: Option<String>,
    /// Whether image parts may name local files.
    pub read_files: bool,
}

/// `{"total", "messages", "breakdown"}` of `conversation`.
pub fn count(
    conversation: &Conversation,
    args: &CountArgs,
) -> Result<ConversationCount, CommandError> {
    let table = match &args.costs {
        Some(overlay) => CostTable::with_overlay(overlay)?,
        None => CostTable::default(),
    };
    let counter = TokenCounter::with_table(&args.model, &table)?.read_local_files(args.read_files);
    Ok(counter.count_conversation(conversation)?)
}
