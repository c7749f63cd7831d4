//! Conversations as the commands take them: a format id (`--from`, `--to`) and a file in it.

use chorus_core::Conversation;
use chorus_formats::Format;

use crate::error::CliError;
use crate::input::read_text;

/// Reads a format id (a clap value parser).
pub fn parse_format(id: &str) -> Result<Format, String> {
    id.parse::<Format>().map_err(|e| e.to_string())
}

/// Reads and decodes the conversation in `path` (or `-`); one that does not decode is rejected.
pub fn read_conversation(path: &str, format: Format) -> Result<Conversation, CliError> {
    let text = read_text(path)?;
    format
        .decode(&text)
        .map_err(|e| CliError::rejected(format!("{path}: {e}")))
}
