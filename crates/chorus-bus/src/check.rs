//! The publish-time check: a hook that validates each published document.

use serde_json::Value;

use chorus_core::Problem;

/// Checks a published document; returns the problems found (empty when valid).
pub trait PublishCheck: Send + Sync {
    /// Validates the parsed JSON of a published message.
    fn validate(&self, document: &Value) -> Vec<Problem>;
}

impl<F> PublishCheck for F
where
    F: Fn(&Value) -> Vec<Problem> + Send + Sync,
{
    fn validate(&self, document: &Value) -> Vec<Problem> {
        self(document)
    }
}
