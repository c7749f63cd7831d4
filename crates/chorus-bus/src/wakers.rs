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

/// How long a waiter may sleep when a queue's next delivery becomes visible at `next_ms` (Unix
/// ms): until then, or, when it is visible already (raced with the last fetch), one
/// `poll_interval`, so that it looks again soon but never spins.
pub(crate) fn until_visible(next_ms: i64, poll_interval: Duration) -> Duration {
    match next_ms - crate::config::now_ms() {
        left if left <= 0 => poll_interval,
        left => Duration::from_millis(u64::try_from(left).unwrap_or(0)),
    }
}

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

    /// Wakes one consumer waiting on `queue` (a message for one), or, when none waits, the
    /// next to wait (one that looked at the store just before this would otherwise sleep
    /// through it); a woken consumer that goes away passes the wake on.
    pub(crate) fn wake(&self, queue: &str) {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = queues.get(queue) {
            n.notify_one();
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

    /// Wakes every waiting consumer, and the next to wait on each queue (another process
    /// changed the file; a notification connection was lost and is back).
    pub(crate) fn wake_all(&self) {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        for n in queues.values() {
            n.notify_waiters();
            n.notify_one();
        }
    }
}

#[cfg(any(feature = "nats", feature = "redis", feature = "postgres"))]
/// A task that listens for another process's wake notifications (NATS, Redis) for as long as
/// its bus lives: dropped with the bus, it stops (and its subscription ends).
pub(crate) struct Listener(pub(crate) tokio::task::JoinHandle<()>);

#[cfg(any(feature = "nats", feature = "redis", feature = "postgres"))]
impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The announcements a process owes for later (a nack's delay, its leases running out), as
/// tasks that end with the bus: dropped with it, they are aborted (and give back their
/// connection).
#[cfg(any(feature = "nats", feature = "redis"))]
#[derive(Default)]
pub(crate) struct Timers {
    tasks: Mutex<tokio::task::JoinSet<()>>,
    /// The latest lease deadline of each queue with a lease timer running.
    leases: Arc<Mutex<HashMap<String, tokio::time::Instant>>>,
}

#[cfg(any(feature = "nats", feature = "redis"))]
impl Timers {
    /// Runs `announce` after `delay`.
    pub(crate) fn after(
        &self,
        delay: Duration,
        announce: impl Future<Output = ()> + Send + 'static,
    ) {
        self.spawn(async move {
            tokio::time::sleep(delay).await;
            announce.await;
        });
    }

    /// Runs `announce` once the leases handed out on `queue` now (for `lease`) may have run
    /// out: at most one task a queue, however many fetches, each moving its deadline on; it
    /// announces at each deadline it reaches until no later one was set.
    pub(crate) fn lease<F, Fut>(&self, queue: &str, lease: Duration, announce: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let at = tokio::time::Instant::now() + lease;
        {
            let mut due = self.leases.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(later) = due.get_mut(queue) {
                *later = (*later).max(at);
                return;
            }
            due.insert(queue.to_owned(), at);
        }
        let (leases, queue) = (self.leases.clone(), queue.to_owned());
        self.spawn(async move {
            let mut until = at;
            loop {
                tokio::time::sleep_until(until).await;
                announce().await;
                let mut due = leases.lock().unwrap_or_else(|p| p.into_inner());
                match due.get(&queue) {
                    Some(&later) if later > until => until = later,
                    _ => {
                        due.remove(&queue);
                        return;
                    }
                }
            }
        });
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Finished timers are let go as new ones come.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task);
    }
}
