//! Durable records of an agent's work on a task, kept in the hub's store: the outputs of each
//! handled delivery, each tool call (before it runs and its result after), and an LLM agent's
//! conversation after each step. A restarted worker, or another replica of the agent, reads
//! them back and goes on where the work stopped instead of doing it again.
//!
//! A record is written once under its key: the first writer wins and a second write of the same
//! key reports that it was already recorded (built on chorus-bus `commit_once`/`effects`).

mod bus;
mod http;

pub use bus::BusJournal;
pub use http::HttpJournal;

use async_trait::async_trait;
use serde_json::Value;

/// A journal could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("agent journal: {0}")]
pub struct JournalError(pub String);

/// The book of records of one agent for one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Book {
    /// The agent (shared by its replicas).
    pub agent: String,
    /// The task.
    pub task: String,
}

impl Book {
    /// The book of `agent` for `task`.
    pub fn new(agent: &str, task: &str) -> Book {
        Book {
            agent: agent.to_owned(),
            task: task.to_owned(),
        }
    }

    /// The store's handler name for this book: every record of the book is an effect of it.
    pub fn handler(&self) -> String {
        format!("journal/{}/{}", self.agent, self.task)
    }
}

/// Where an agent's records are kept: the embedded store or the hub.
#[async_trait]
pub trait Journal: Send + Sync {
    /// Records `record` under `key` in `book`, once; false when `key` was already recorded (the
    /// first record stands).
    async fn record(&self, book: &Book, key: &str, record: &Value) -> Result<bool, JournalError>;

    /// The records of `book`, in the order they were recorded.
    async fn records(&self, book: &Book) -> Result<Vec<(String, Value)>, JournalError>;

    /// The record under `key`, if there is one.
    async fn find(&self, book: &Book, key: &str) -> Result<Option<Value>, JournalError> {
        Ok(self
            .records(book)
            .await?
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v))
    }
}
