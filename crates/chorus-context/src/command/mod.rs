//! The logic of `chorus count` and `chorus trim`, as functions from a conversation and arguments
//! to output (reading and writing formats is the CLI's part, through chorus-formats).

pub mod count;
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
pub use trim::{CounterChoice, TrimArgs, TrimOutput, TrimStrategy, trim};
