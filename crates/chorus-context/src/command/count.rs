//! `chorus count`: the token count of a conversation, per message and by category.

use chorus_core::Conversation;

use super::{CommandError, counter_for};
use crate::count::ConversationCount;
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
    /// A Hugging Face `tokenizer.json` that counts the text.
    pub tokenizer: Option<String>,
}

/// `{"total", "messages", "breakdown", "tokenizer", "exact"}` of `conversation`; its
/// `warnings` say why a count is an estimate.
pub fn count(
    conversation: &Conversation,
    args: &CountArgs,
) -> Result<ConversationCount, CommandError> {
    let table = match &args.costs {
        Some(overlay) => CostTable::with_overlay(overlay)?,
        None => CostTable::default(),
    };
    let counter = counter_for(&args.model, args.tokenizer.as_deref(), &table)?
        .read_local_files(args.read_files);
    Ok(counter.count_conversation(conversation)?)
}
