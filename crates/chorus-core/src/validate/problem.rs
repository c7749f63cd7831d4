//! What validation reports: problems with a JSON pointer, a message, a hint and a severity.

use std::fmt;

use serde::Serialize;

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The document is rejected.
    Error,
    /// The document is accepted, but something looks wrong.
    Warning,
}

/// One problem in a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// JSON pointer of the offending value (`""` is the whole document).
    pub pointer: String,
    /// What was expected and what was found.
    pub message: String,
    /// How to fix a known, common mistake.
    pub hint: Option<String>,
    /// Error or warning.
    pub severity: Severity,
}

impl Problem {
    /// An error at `pointer`.
    pub fn error(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            pointer: pointer.into(),
            message: message.into(),
            hint: None,
            severity: Severity::Error,
        }
    }

    /// A warning at `pointer`.
    pub fn warning(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            severity: Severity::Warning,
            ..Problem::error(pointer, message)
        }
    }

    /// The same problem with a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        if self.severity == Severity::Warning {
            write!(f, "warning: ")?;
        }
        write!(f, "{pointer}: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}
