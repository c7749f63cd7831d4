//! The logic of `chorus count` and `chorus trim`, as functions from a conversation and arguments
//! to output (reading and writing formats is the CLI's part, through chorus-formats).

pub mod count;
pub mod trim;

use crate::count::TokenCounter;
use crate::error::ContextError;
use crate::media::CostTable;

/// Why a command failed; the CLI maps `Input` to exit code 1 and `Usage` to 2.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CommandError {
    /// The input was read but rejected.
    #[error("{0}")]
    Input(String),
    /// The arguments do not make sense together.
    #[error("{0}")]
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
        let file = crate::count::HfTokenizer::from_file(std::path::Path::new(path))?;
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

pub use count::{CountArgs, count};
pub use trim::{CounterChoice, TrimArgs, TrimOutput, TrimStrategy, trim};
