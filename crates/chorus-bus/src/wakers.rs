//! Consumers waiting on the queues of one database file: woken per queue when this process
//! stores or gives back a message there, and all at once when another process has committed.
//!
//! Every `SqliteBus` of a process on the same file shares one set, so a waiting consumer costs
//! nothing until something happens to its own queue (before, each waiting consumer polled the
//! file every 10 ms through the single writer thread).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use tokio::sync::Notify;

/// The waiting consumers of one database file, by queue.
#[derive(Default)]
pub(crate) struct Wakers {
    queues: Mutex<HashMap<String, Arc<Notify>>>,
}

/// The sets of every database file open in this process.
static OPEN: LazyLock<Mutex<HashMap<PathBuf, Weak<Wakers>>>> = LazyLock::new(Mutex::default);

impl Wakers {
    /// The set shared by every bus of this process on the file at `path` (which exists).
    pub(crate) fn of(path: &Path) -> Arc<Wakers> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|_, w| w.strong_count() > 0);
        if let Some(found) = open.get(&key).and_then(Weak::upgrade) {
            return found;
        }
        let made = Arc::new(Wakers::default());
        open.insert(key, Arc::downgrade(&made));
        made
    }

    /// What waiters on `queue` wait on.
    pub(crate) fn queue(&self, queue: &str) -> Arc<Notify> {
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues.entry(queue.to_owned()).or_default().clone()
    }

    /// Wakes the consumers waiting on `queue`.
    pub(crate) fn wake(&self, queue: &str) {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = queues.get(queue) {
            n.notify_waiters();
        }
    }

    /// Wakes every waiting consumer (another process changed the file).
    pub(crate) fn wake_all(&self) {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        for n in queues.values() {
            n.notify_waiters();
        }
    }
}
