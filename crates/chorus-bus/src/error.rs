//! Errors of the bus.

use chorus_core::Problem;

use crate::content::ContentDigest;

/// Joins validation problems into one line for error messages (`at POINTER: ...; at ...`).
pub(crate) fn join_issues(issues: &[Problem]) -> String {
    issues
        .iter()
        .map(|issue| format!("at {issue}"))
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
        issues: Vec<Problem>,
        /// Where the original bytes were kept.
        dead_letter_id: String,
    },
    /// The id was already stored, within the dedupe window, with other content (see
    /// [`ContentDigest`]); nothing was stored.
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

impl BusError {
    /// True when the store could not be reached or could not write (a lost connection, a full
    /// disk, a lock): it may come back, so a retry later may succeed; false for a refusal or a
    /// damaged store.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, BusError::Storage(_) | BusError::Backend { .. })
    }
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
                Problem::expected("/metadata/priority", "one of LOW", "\"low\"")
                    .with_hint("upper-case"),
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
