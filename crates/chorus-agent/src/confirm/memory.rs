//! Confirmations kept in memory: for tests, examples and single-process flows.

use std::sync::Mutex;

use async_trait::async_trait;
use chorus_bus::Page;

use super::{ConfirmError, Confirmation, ConfirmationState, Confirmations, page, rules};

/// A [`Confirmations`] store held in memory, lost when the process ends.
#[derive(Debug, Default)]
pub struct MemoryConfirmations {
    items: Mutex<Vec<Confirmation>>,
}

impl MemoryConfirmations {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Vec<Confirmation>) -> T) -> Result<T, ConfirmError> {
        let mut items = self
            .items
            .lock()
            .map_err(|_| ConfirmError::Store("the store's lock was poisoned".into()))?;
        Ok(f(&mut items))
    }

    fn change(
        &self,
        id: &str,
        f: impl FnOnce(&mut Confirmation) -> Result<(), ConfirmError>,
    ) -> Result<Confirmation, ConfirmError> {
        self.with(|items| {
            let c = items
                .iter_mut()
                .find(|c| c.id == id)
                .ok_or_else(|| ConfirmError::NotFound(id.to_owned()))?;
            f(c)?;
            Ok(c.clone())
        })?
    }
}

#[async_trait]
impl Confirmations for MemoryConfirmations {
    async fn request(&self, pending: Confirmation) -> Result<Confirmation, ConfirmError> {
        self.with(|items| {
            if let Some(found) = items
                .iter()
                .find(|c| c.agent == pending.agent && c.call_id == pending.call_id)
            {
                return found.clone();
            }
            let fresh = Confirmation {
                state: ConfirmationState::Pending,
                decided_by: None,
                note: None,
                ..pending
            };
            items.push(fresh.clone());
            fresh
        })
    }

    async fn get(&self, id: &str) -> Result<Option<Confirmation>, ConfirmError> {
        self.with(|items| items.iter().find(|c| c.id == id).cloned())
    }

    async fn list(
        &self,
        state: Option<ConfirmationState>,
    ) -> Result<Vec<Confirmation>, ConfirmError> {
        self.with(|items| {
            items
                .iter()
                .filter(|c| state.is_none_or(|s| c.state == s))
                .cloned()
                .collect()
        })
    }

    async fn decide(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        note: Option<String>,
    ) -> Result<Confirmation, ConfirmError> {
        self.change(id, |c| rules::decide(c, approve, by, note))
    }

    async fn consume(&self, id: &str, arguments: &str) -> Result<Confirmation, ConfirmError> {
        self.change(id, |c| rules::consume(c, arguments))
    }

    async fn page(
        &self,
        state: Option<ConfirmationState>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Confirmation>, ConfirmError> {
        let all = self.with(|items| items.clone())?;
        page::select(all, state, after, limit)
    }

    async fn prune(&self, before_ms: u64) -> Result<u64, ConfirmError> {
        self.with(|items| {
            let before = items.len();
            items.retain(|c| !page::prunable(c, before_ms));
            (before - items.len()) as u64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::MemoryConfirmations;

    crate::confirm::suite::confirmations_suite!(MemoryConfirmations::new());
}
