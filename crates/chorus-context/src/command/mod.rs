//! The logic of `chorus count` and `chorus trim`, as functions from arguments to output.

pub mod count;
pub mod input;
pub mod trim;

use crate::error::ContextError;

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
            ContextError::UnknownModel { .. } | ContextError::Parameters(_) => {
                CommandError::Usage(e.to_string())
            }
            other => CommandError::Input(other.to_string()),
        }
    }
}

pub use count::{CountArgs, count};
pub use input::{Input, InputFormat, read_conversation, write_back};
pub use trim::{CounterChoice, TrimArgs, TrimOutput, TrimStrategy, trim};
