//! The publish-time validation hook.

use serde_json::Value;

use chorus_core::Problem;

/// Checks a published document; returns the problems found (empty when valid).
pub trait Validator: Send + Sync {
    /// Validates the parsed JSON of a published message.
    fn validate(&self, document: &Value) -> Vec<Problem>;
}

impl<F> Validator for F
where
    F: Fn(&Value) -> Vec<Problem> + Send + Sync,
{
    fn validate(&self, document: &Value) -> Vec<Problem> {
        self(document)
    }
}
