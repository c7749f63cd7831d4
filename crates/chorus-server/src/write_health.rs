//! Whether the store takes the writes publishes make: the last failure of a real write (disk
//! full, a file-size limit, a read-only store), until a write succeeds again. `/healthz` reports
//! it: a probe's tiny write can still fit where a message no longer does.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a failed write keeps the store reported unhealthy when no write succeeds after it
/// (then the probe decides again: a store whose clients went elsewhere is looked at anew).
const REMEMBERED: Duration = Duration::from_secs(5);

/// The last failed write, if no write succeeded since.
#[derive(Debug, Default)]
pub struct WriteHealth {
    /// Set with `last`: lets a successful write skip the lock when nothing failed.
    failing: AtomicBool,
    last: Mutex<Option<(Instant, String)>>,
}

impl WriteHealth {
    /// A write failed for `why`.
    pub fn failed(&self, why: &str) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), why.into()));
        self.failing.store(true, Ordering::Release);
    }

    /// A write succeeded: the store takes writes again.
    pub fn succeeded(&self) {
        if self.failing.swap(false, Ordering::AcqRel) {
            *self.last.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// Why writes fail now: the last failure, when recent and nothing succeeded since.
    pub fn failing(&self) -> Option<String> {
        if !self.failing.load(Ordering::Acquire) {
            return None;
        }
        let last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        last.as_ref()
            .filter(|(at, _)| at.elapsed() < REMEMBERED)
            .map(|(at, why)| format!("{why} ({} s ago)", at.elapsed().as_secs()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_reported_until_a_write_succeeds() {
        let health = WriteHealth::default();
        assert_eq!(health.failing(), None);
        health.failed("storage failed: disk full");
        assert!(
            health
                .failing()
                .unwrap()
                .starts_with("storage failed: disk full")
        );
        health.succeeded();
        assert_eq!(health.failing(), None);
    }
}
