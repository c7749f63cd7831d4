//! The publish-time validation hook.

use serde_json::Value;

use crate::error::Issue;

/// Checks a published document; returns the problems found (empty when valid).
pub trait Validator: Send + Sync {
    /// Validates the parsed JSON of a published message.
    fn validate(&self, document: &Value) -> Vec<Issue>;
}

impl<F> Validator for F
where
    F: Fn(&Value) -> Vec<Issue> + Send + Sync,
{
    fn validate(&self, document: &Value) -> Vec<Issue> {
        self(document)
    }
}
