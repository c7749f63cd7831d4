//! The error of building or running a flow.

use super::spec::SpecError;

/// Why a flow could not run or did not end normally.
#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The flow file is unusable.
    #[error("{0}")]
    Spec(#[from] SpecError),
    /// An agent failed (with no failure strategy to recover) or sent something the bus refused.
    #[error("flow failed: {0}")]
    Failed(String),
    /// The server refused the agent for good (a 4xx answer such as 401, 403 or 404): trying
    /// again will not help.
    #[error("the server refused: {0}")]
    Refused(String),
}
