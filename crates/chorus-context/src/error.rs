//! The one error type of this crate: every variant names where, what was expected and what was found.

use thiserror::Error;

/// Why counting, data assembly, variable resolution or trimming failed.
#[derive(Debug, Error, PartialEq)]
pub enum ContextError {
    /// The model name maps to no known tokenizer family.
    #[error(
        "unknown model `{model}`: expected a model of a known family ({known}); hint: use `approximate` for unknown models"
    )]
    UnknownModel {
        /// The name given.
        model: String,
        /// The families chorus knows.
        known: String,
    },
    /// chorus-harmony refused to render the request of a gpt-oss model.
    #[error("cannot count for gpt-oss: {problem}")]
    Harmony {
        /// The renderer's refusal (at the JSON pointer of the Harmony message).
        problem: chorus_core::Problem,
    },
    /// A media part could not be measured (at the JSON pointer of the part).
    #[error("{0}")]
    Media(chorus_core::Problem),
    /// A media cost table is malformed or names a missing entry.
    #[error("media cost table {pointer}: {message}")]
    CostTable {
        /// JSON pointer into the table.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// A `†kind.path` variable or an `_outputPath` could not be resolved.
    #[error("{problem}")]
    Variable {
        /// The variable as written.
        variable: String,
        /// At the JSON pointer of the string holding the variable: why it cannot be resolved,
        /// with the keys that exist at the failing level (or another hint).
        problem: chorus_core::Problem,
    },
    /// Tool-call arguments are not a JSON document.
    #[error("{pointer}: expected tool-call arguments as a JSON string; found {found}")]
    Arguments {
        /// JSON pointer of the arguments.
        pointer: String,
        /// The parse error.
        found: String,
    },
    /// The budget cannot be met.
    #[error("cannot fit {needed} tokens into a budget of {budget}: {reason}")]
    DoesNotFit {
        /// Tokens of what could not be dropped.
        needed: usize,
        /// The budget.
        budget: usize,
        /// Why nothing more could be dropped.
        reason: String,
    },
    /// Parameters that contradict each other.
    #[error("invalid parameters: {0}")]
    Parameters(String),
    /// A tokenizer file could not be loaded.
    #[error("tokenizer {path}: {message}")]
    Tokenizer {
        /// Where it was read from.
        path: String,
        /// What went wrong.
        message: String,
    },
}

impl ContextError {
    /// The variable `variable` at `pointer` cannot be resolved, for `reason`.
    pub(crate) fn variable(
        pointer: &str,
        variable: String,
        reason: impl std::fmt::Display,
        hint: Option<String>,
    ) -> ContextError {
        let mut problem = chorus_core::Problem::error(
            pointer,
            format!("variable `{variable}` cannot be resolved: {reason}"),
        );
        problem.hint = hint;
        ContextError::Variable { variable, problem }
    }
}

/// Result with [`ContextError`].
pub type Result<T> = std::result::Result<T, ContextError>;
