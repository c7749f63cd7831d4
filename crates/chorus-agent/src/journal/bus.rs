//! A journal in a chorus-bus store (the embedded SQLite file of `chorus run`, or the hub's own
//! store when the hub serves it over HTTP).

use std::sync::Arc;

use async_trait::async_trait;
use chorus_bus::Bus;
use serde_json::Value;

use super::{Book, Journal, JournalError};

/// Records as effects of the handler `journal/<agent>/<task>` (`Bus::commit_once`).
#[derive(Clone)]
pub struct BusJournal {
    bus: Arc<dyn Bus>,
}

impl BusJournal {
    /// A journal kept in `bus`'s store.
    pub fn new(bus: Arc<dyn Bus>) -> Self {
        BusJournal { bus }
    }
}

fn failed(e: impl ToString) -> JournalError {
    JournalError(e.to_string())
}

#[async_trait]
impl Journal for BusJournal {
    async fn record(&self, book: &Book, key: &str, record: &Value) -> Result<bool, JournalError> {
        let bytes = serde_json::to_vec(record).map_err(failed)?;
        self.bus
            .commit_once(&book.handler(), key, &bytes, &[])
            .await
            .map_err(failed)
    }

    async fn records(&self, book: &Book) -> Result<Vec<(String, Value)>, JournalError> {
        self.bus
            .effects(&book.handler())
            .await
            .map_err(failed)?
            .into_iter()
            .map(|e| {
                let value = serde_json::from_slice(&e.record).map_err(failed)?;
                Ok((e.message_id, value))
            })
            .collect()
    }
}
