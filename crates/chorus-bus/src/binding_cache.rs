//! A short-lived copy of the bindings, so that publishes do not read them from storage each time.

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::BusResult;
use crate::routing::Binding;

/// How long another process's new binding may take to be seen by this one's publishes.
pub(crate) const BINDING_CACHE: Duration = Duration::from_secs(1);

/// The bindings as last read, refreshed by one reader at a time.
#[derive(Default)]
pub(crate) struct BindingCache {
    list: Mutex<Option<(Instant, Vec<Binding>)>>,
    refresh: tokio::sync::Mutex<()>,
}

impl BindingCache {
    fn fresh(&self) -> Option<Vec<Binding>> {
        let list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.as_ref()
            .filter(|(at, _)| at.elapsed() < BINDING_CACHE)
            .map(|(_, l)| l.clone())
    }

    /// The cached bindings, or those `load` reads when older than [`BINDING_CACHE`];
    /// concurrent callers wait for one load instead of each reading storage.
    pub(crate) async fn get<F, Fut>(&self, load: F) -> BusResult<Vec<Binding>>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = BusResult<Vec<Binding>>>,
    {
        if let Some(list) = self.fresh() {
            return Ok(list);
        }
        let _refreshing = self.refresh.lock().await;
        if let Some(list) = self.fresh() {
            return Ok(list);
        }
        let list = load().await?;
        *self.list.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), list.clone()));
        Ok(list)
    }

    /// Forgets the copy (after this process added a binding).
    pub(crate) fn invalidate(&self) {
        *self.list.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routing::Filter;

    #[tokio::test]
    async fn loads_once_until_invalidated() {
        let cache = BindingCache::default();
        let one = vec![Binding::new("q", Filter::HandoffType("X".into()))];
        assert_eq!(cache.get(|| async { Ok(one.clone()) }).await.unwrap(), one);
        // Fresh: the loader is not called again.
        assert_eq!(cache.get(|| async { Ok(Vec::new()) }).await.unwrap(), one);
        cache.invalidate();
        assert_eq!(
            cache.get(|| async { Ok(Vec::new()) }).await.unwrap(),
            vec![]
        );
    }
}
