//! The one error shape of chorus: a problem at a JSON pointer, saying what was expected and what
//! was found, with a hint when a common mistake is known.
//!
//! Validation reports problems; the other crates refuse input with them (the bus on publish,
//! provider formats on decode, the Harmony renderer and parser), wrapped where a crate needs more.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How serious a problem is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The document is rejected.
    #[default]
    Error,
    /// The document is accepted, but something looks wrong.
    Warning,
}

impl Severity {
    /// True for [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        *self == Severity::Error
    }
}

/// One problem in a document.
///
/// Its JSON is `{"pointer", "message", "hint"}`, plus `"severity": "warning"` for a warning.
/// Displayed as `POINTER: MESSAGE (hint: HINT)`; the whole document is `(root)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// JSON pointer of the offending value (`""` is the whole document), or for input that is
    /// not JSON, the place in it (`token N`, `byte N`). A JSON syntax error is at the
    /// pointer where it was noticed, its line and column in the message.
    pub pointer: String,
    /// What was expected and what was found.
    pub message: String,
    /// How to fix a known, common mistake.
    pub hint: Option<String>,
    /// Error or warning.
    #[serde(default, skip_serializing_if = "Severity::is_error")]
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

    /// An error saying what was `expected` and what was `found` at `pointer`.
    pub fn expected(
        pointer: impl Into<String>,
        expected: impl fmt::Display,
        found: impl fmt::Display,
    ) -> Self {
        Problem::error(pointer, format!("expected {expected}, found {found}"))
    }

    /// The same problem with a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.pointer.as_str() {
            "" => write!(f, "(root): ")?,
            pointer => write!(f, "{pointer}: ")?,
        }
        if self.severity == Severity::Warning {
            write!(f, "warning: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Problem {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_place_the_message_and_the_hint() {
        let p = Problem::expected("/a/0", "a string", "the number 1").with_hint("quote it");
        assert_eq!(
            p.to_string(),
            "/a/0: expected a string, found the number 1 (hint: quote it)"
        );
        assert_eq!(Problem::error("", "empty").to_string(), "(root): empty");
        assert_eq!(
            Problem::warning("/x", "odd").to_string(),
            "/x: warning: odd"
        );
        assert_eq!(
            Problem::expected("token 3", "<|message|>", "the end").to_string(),
            "token 3: expected <|message|>, found the end"
        );
    }

    #[test]
    fn json_keeps_the_shape_of_an_error_and_marks_warnings() {
        let error = serde_json::to_value(Problem::error("/a", "bad")).unwrap();
        assert_eq!(
            error,
            serde_json::json!({"pointer": "/a", "message": "bad", "hint": null})
        );
        let warning = serde_json::to_value(Problem::warning("/a", "odd")).unwrap();
        assert_eq!(warning["severity"], "warning");
        let back: Problem = serde_json::from_value(error).unwrap();
        assert_eq!(back, Problem::error("/a", "bad"));
    }
}
