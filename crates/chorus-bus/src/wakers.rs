//! Consumers waiting on queues, woken per queue when a message is stored or given back there.
//!
//! SQLite: every `SqliteBus` of a process on the same file shares one set ([`Wakers::of`]),
//! woken by this process's writes and, all at once, when another process has committed. NATS
//! and Redis: one set per bus, woken by a notification every process sends on the server when
//! it stores, gives back or leases a message. A waiting consumer costs nothing until something
//! happens to its own queue (before, each one polled the store every 10 to 20 ms).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use std::future::Future;
use std::time::Duration;

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

    /// Wakes the consumers waiting on `queue`, and the next one to wait (one that looked at
    /// the store just before this and is about to wait would otherwise sleep through it).
    pub(crate) fn wake(&self, queue: &str) {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = queues.get(queue) {
            wake(n);
        }
    }

    /// Waits until `queue` is woken, at most `timeout`. `look` runs once the wait is armed (so
    /// that a wake between the caller's last look at the store and this wait is not lost) and
    /// may shorten it: to when a delayed message becomes visible, or to a quick second look
    /// when messages were there already.
    pub(crate) async fn wait(
        &self,
        queue: &str,
        timeout: Duration,
        look: impl Future<Output = Option<Duration>>,
    ) {
        let notify = self.queue(queue);
        let woken = notify.notified();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let wait = look.await.map_or(timeout, |at_most| timeout.min(at_most));
        let _ = tokio::time::timeout(wait, woken).await;
    }

    /// Wakes every waiting consumer (another process changed the file).
    pub(crate) fn wake_all(&self) {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        for n in queues.values() {
            wake(n);
        }
    }
}

/// Wakes every waiter of `n` and leaves a permit for the next.
fn wake(n: &Notify) {
    n.notify_waiters();
    n.notify_one();
}

#[cfg(any(feature = "nats", feature = "redis"))]
/// A task that listens for another process's wake notifications (NATS, Redis) for as long as
/// its bus lives: dropped with the bus, it stops (and its subscription ends).
pub(crate) struct Listener(pub(crate) tokio::task::JoinHandle<()>);

#[cfg(any(feature = "nats", feature = "redis"))]
impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}
