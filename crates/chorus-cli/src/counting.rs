//! What `chorus count` and `chorus trim` share: the token counter a model and a tokenizer file
//! choose, and their failures as input or usage errors.

use chorus_context::{ContextError, CostTable, TokenCounter};

/// Why a command failed; the CLI maps `Input` to exit code 1 and `Usage` to 2.
#[derive(Debug, PartialEq)]
pub enum CommandError {
    /// The input was read but rejected.
    Input(String),
    /// The arguments do not make sense together.
    Usage(String),
}

impl From<ContextError> for CommandError {
    fn from(e: ContextError) -> Self {
        match e {
            ContextError::UnknownModel { .. }
            | ContextError::Parameters(_)
            | ContextError::Tokenizer { .. } => CommandError::Usage(e.to_string()),
            other => CommandError::Input(other.to_string()),
        }
    }
}

/// The counter for `model`: text through the Hugging Face `tokenizer.json` at `tokenizer` when
/// given (cargo feature `hf`), else the model family's tokenizer or an estimate.
pub fn counter_for(
    model: &str,
    tokenizer: Option<&str>,
    table: &CostTable,
) -> Result<TokenCounter, CommandError> {
    let Some(path) = tokenizer else {
        return Ok(TokenCounter::with_table(model, table)?);
    };
    #[cfg(feature = "hf")]
    {
        let file = chorus_context::HfTokenizer::from_file(std::path::Path::new(path))?;
        Ok(TokenCounter::with_tokenizer(
            std::sync::Arc::new(file),
            model,
            table,
        )?)
    }
    #[cfg(not(feature = "hf"))]
    {
        Err(CommandError::Usage(format!(
            "--tokenizer {path}: this build has no Hugging Face tokenizer support (cargo feature `hf` of chorus-context)"
        )))
    }
}

/// A conversation with a system message, an image, a reply and a tool, for the tests of
/// `count` and `trim`.
#[cfg(test)]
pub fn sample_conversation() -> chorus_core::Conversation {
    serde_json::from_value(serde_json::json!({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high", "width": 1024, "height": 1024}}]},
        {"role": "assistant", "content": "A map."},
        {"role": "user", "content": "Of what?"}],
        "tools": [{"type": "function", "function": {"name": "zoom", "description": "Zooms in."}}]}))
    .unwrap()
}
