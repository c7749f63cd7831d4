//! Human confirmation: calls of `requires_confirmation` tools wait here for a person.
//!
//! A confirmation is bound to one exact call (agent, tool, call id and a digest of the argument
//! string) and approval is single-use: [`Confirmations::consume`] succeeds once.

mod http;
mod memory;
mod page;
mod rules;
mod sqlite;
#[cfg(test)]
mod suite;

pub use http::HttpConfirmations;
pub use memory::MemoryConfirmations;
pub use sqlite::SqliteConfirmations;

use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use chorus_bus::Page;
use serde::{Deserialize, Serialize};

/// Where a confirmation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationState {
    /// Waiting for a person.
    Pending,
    /// Approved and not yet used.
    Approved,
    /// Refused by a person.
    Rejected,
    /// Approved and used by the one call it was for.
    Consumed,
}

/// A tool call that waits for, or received, a person's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Confirmation {
    /// Unique id.
    pub id: String,
    /// The agent that wants to make the call.
    pub agent: String,
    /// The tool's name.
    pub tool: String,
    /// The model's tool call id.
    pub call_id: String,
    /// The argument string exactly as the model gave it.
    pub arguments: String,
    /// The task the call belongs to, if any.
    pub task_id: Option<String>,
    /// Where it stands.
    pub state: ConfirmationState,
    /// Who decided, and why, once decided.
    pub decided_by: Option<String>,
    /// The reason given with the decision.
    pub note: Option<String>,
    /// Creation time, Unix milliseconds.
    pub created_at_ms: u64,
}

impl Confirmation {
    /// A new pending confirmation for one tool call, with a fresh id and the current time.
    pub fn pending(
        agent: impl Into<String>,
        tool: impl Into<String>,
        call_id: impl Into<String>,
        arguments: impl Into<String>,
        task_id: Option<String>,
    ) -> Self {
        let created_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self {
            id: format!("conf-{}", uuid::Uuid::new_v4().simple()),
            agent: agent.into(),
            tool: tool.into(),
            call_id: call_id.into(),
            arguments: arguments.into(),
            task_id,
            state: ConfirmationState::Pending,
            decided_by: None,
            note: None,
            created_at_ms,
        }
    }
}

impl ConfirmationState {
    /// The state's name as it appears in JSON and in query strings.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::Consumed => "consumed",
        }
    }

    /// The state named `s` (`pending`, `approved`, `rejected`, `consumed`).
    pub fn parse(s: &str) -> Option<Self> {
        [
            Self::Pending,
            Self::Approved,
            Self::Rejected,
            Self::Consumed,
        ]
        .into_iter()
        .find(|st| st.as_str() == s)
    }
}

/// Store of confirmations, shared by agents (who request and consume) and people (who decide).
#[async_trait]
pub trait Confirmations: Send + Sync {
    /// Records a pending confirmation for this exact call, or returns the one already recorded.
    async fn request(&self, pending: Confirmation) -> Result<Confirmation, ConfirmError>;
    /// One confirmation by id.
    async fn get(&self, id: &str) -> Result<Option<Confirmation>, ConfirmError>;
    /// Every confirmation in `state` (all when `None`), oldest first.
    async fn list(
        &self,
        state: Option<ConfirmationState>,
    ) -> Result<Vec<Confirmation>, ConfirmError>;
    /// A person approves or rejects a pending confirmation.
    async fn decide(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        note: Option<String>,
    ) -> Result<Confirmation, ConfirmError>;
    /// Uses an approval for the call with exactly these arguments; succeeds once.
    async fn consume(&self, id: &str, arguments: &str) -> Result<Confirmation, ConfirmError>;

    /// Up to `limit` confirmations in `state` (all when `None`), oldest first (creation time,
    /// then id), after cursor `after` (the `next` of the page before; `None` from the start).
    async fn page(
        &self,
        state: Option<ConfirmationState>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Confirmation>, ConfirmError> {
        page::select(self.list(state).await?, state, after, limit)
    }

    /// Deletes the rejected and consumed confirmations created before `before_ms` (pending and
    /// approved ones are kept); returns how many. Only a store that keeps them can.
    async fn prune(&self, before_ms: u64) -> Result<u64, ConfirmError> {
        let _ = before_ms;
        Err(ConfirmError::Store(
            "this store does not prune: the store that keeps the confirmations (the server's) does"
                .into(),
        ))
    }
}

/// A confirmation could not be recorded, found, decided or used.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmError {
    /// No confirmation with this id.
    #[error("no confirmation {0}")]
    NotFound(String),
    /// The confirmation is not in a state that allows this (e.g. deciding twice, consuming a
    /// pending, rejected or already used one).
    #[error("confirmation {id} is {state:?}: {hint}")]
    WrongState {
        /// The confirmation.
        id: String,
        /// Its state.
        state: ConfirmationState,
        /// What to do instead.
        hint: String,
    },
    /// The arguments differ from the ones that were approved.
    #[error("confirmation {0} was given for different arguments")]
    ArgumentsChanged(String),
    /// The store failed.
    #[error("confirmation store: {0}")]
    Store(String),
    /// A page was asked for with a cursor the store did not hand out.
    #[error("bad cursor: {0}")]
    BadCursor(String),
}
