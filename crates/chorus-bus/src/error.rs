//! Errors of the bus and the validation issues it reports.

use std::fmt;

use crate::content::ContentDigest;

/// One validation problem: where it is and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Issue {
    /// JSON pointer of the offending value (`""` for the whole document).
    pub pointer: String,
    /// What was expected and what was found.
    pub message: String,
    /// How to fix a known common mistake.
    pub hint: Option<String>,
}

impl Issue {
    /// An issue saying what was `expected` and what was `found` at `pointer`.
    pub fn new(
        pointer: impl Into<String>,
        expected: impl AsRef<str>,
        found: impl AsRef<str>,
    ) -> Issue {
        Issue {
            pointer: pointer.into(),
            message: format!("expected {}, found {}", expected.as_ref(), found.as_ref()),
            hint: None,
        }
    }

    /// The same issue with a hint attached.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Issue {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Issue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "(document)"
        } else {
            &self.pointer
        };
        write!(f, "at {at}: {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

/// Joins issues into one line for error messages.
pub(crate) fn join_issues(issues: &[Issue]) -> String {
    issues
        .iter()
        .map(Issue::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Everything that can go wrong on the bus.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BusError {
    /// The published message was refused; it was recorded as dead letter `dead_letter_id`.
    #[error("message rejected ({} problem(s)): {}; recorded as dead letter {dead_letter_id}", issues.len(), join_issues(issues))]
    Invalid {
        /// What is wrong with the message.
        issues: Vec<Issue>,
        /// Where the original bytes were kept.
        dead_letter_id: String,
    },
    /// The id was already stored, within the dedupe window, with other content (see
    /// [`crate::content`]); nothing was stored.
    #[error(
        "message id {id:?} was already stored with other content (stored: sha256 {stored}, this one: sha256 {found}); nothing was stored (hint: a retry must send the same document again; a new message needs a new id)"
    )]
    Conflict {
        /// The message id.
        id: String,
        /// The digest of the content stored under the id.
        stored: ContentDigest,
        /// The digest of the content refused.
        found: ContentDigest,
    },
    /// Storage failed (disk full, I/O error, lock); nothing of the operation was acknowledged.
    #[error("storage failed: {0}")]
    Storage(String),
    /// The store is damaged; it is not served.
    #[error(
        "the store is corrupted: {0} (hint: restore the file from a backup or replay from the producers)"
    )]
    Corrupt(String),
    /// The delivery was redelivered elsewhere (its ack deadline passed) or already settled.
    #[error(
        "delivery {token} of message {message_id} is no longer held by this consumer (its ack deadline passed or it was already settled)"
    )]
    StaleDelivery {
        /// The backend's delivery token.
        token: String,
        /// The message id.
        message_id: String,
    },
    /// A dead letter id that does not exist.
    #[error("no dead letter with id {0}")]
    UnknownDeadLetter(String),
    /// The server could not be reached or answered with an error.
    #[error("backend {backend}: {detail}")]
    Backend {
        /// Which backend (nats, redis).
        backend: &'static str,
        /// What happened.
        detail: String,
    },
    /// A bad argument or configuration.
    #[error("invalid argument {what}: {detail}")]
    Config {
        /// The argument or setting.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
    /// A handler of `handle_once` failed; the delivery was negatively acknowledged.
    #[error("handler failed: {0}")]
    Handler(String),
}

/// Result type of bus operations.
pub type BusResult<T> = Result<T, BusError>;

/// A publish of `id` with content `found`, when the dedupe record holds `stored`: a duplicate
/// (`Ok(false)`, nothing stored) when they are the same, else [`BusError::Conflict`].
pub(crate) fn seen_again(id: &str, stored: ContentDigest, found: ContentDigest) -> BusResult<bool> {
    if stored == found {
        return Ok(false);
    }
    Err(BusError::Conflict {
        id: id.to_owned(),
        stored,
        found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_error_names_pointer_expected_found_and_hint() {
        let err = BusError::Invalid {
            issues: vec![
                Issue::new("/metadata/priority", "one of LOW", "\"low\"").with_hint("upper-case"),
            ],
            dead_letter_id: "7".into(),
        };
        let text = err.to_string();
        assert!(
            text.contains(
                "at /metadata/priority: expected one of LOW, found \"low\" (hint: upper-case)"
            ),
            "{text}"
        );
        assert!(text.contains("dead letter 7"));
    }
}
