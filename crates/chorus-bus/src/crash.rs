//! Kill points for crash tests (feature `crash-points`, never in a release build): a process
//! started with `CHORUS_CRASH_AT=<point>:<n>` kills itself (SIGKILL: no unwinding, no flush, no
//! core file) the `n`th time it reaches `point`,
//! so that a test can kill a server at an exact step of a commit instead of at a random moment.
//!
//! Without the feature every point is an empty inline function.

/// The points, in the order a publish reaches them.
pub mod points {
    /// SQLite: a batch holding publishes has written its rows, before its `COMMIT`.
    pub const SQLITE_BEFORE_COMMIT: &str = "sqlite.before_commit";
    /// NATS: the id is claimed in the dedupe record, no copy is sent yet.
    pub const NATS_CLAIMED: &str = "nats.claimed";
    /// NATS: the queue copies are sent, the log entry and the record's "stored" are not.
    pub const NATS_COPIES_SENT: &str = "nats.copies_sent";
    /// Any store: the message is stored (committed), the publisher has no answer yet.
    pub const STORED: &str = "bus.stored";
}

/// The variable that arms a point.
pub const CRASH_AT_VAR: &str = "CHORUS_CRASH_AT";

#[cfg(feature = "crash-points")]
mod armed {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// The armed point and after how many arrivals it fires, read once from the environment.
    fn armed() -> Option<&'static (String, u64)> {
        static ARMED: OnceLock<Option<(String, u64)>> = OnceLock::new();
        ARMED
            .get_or_init(|| {
                let v = std::env::var(super::CRASH_AT_VAR).ok()?;
                let (point, n) = v.rsplit_once(':')?;
                Some((point.to_owned(), n.parse().ok().filter(|n| *n > 0)?))
            })
            .as_ref()
    }

    /// Kills the process the `n`th time the armed point is reached.
    pub fn reached(point: &str) {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        if let Some((armed, n)) = armed()
            && armed == point
            && COUNT.fetch_add(1, Ordering::SeqCst) + 1 == *n
        {
            eprintln!("crash point {point} reached ({n}): SIGKILL");
            // SAFETY: sends SIGKILL to this process; nothing after it runs.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }
}

/// Marks a kill point (see the module doc); kills the process when it is the armed one.
#[inline(always)]
pub fn reached(point: &str) {
    #[cfg(feature = "crash-points")]
    armed::reached(point);
    #[cfg(not(feature = "crash-points"))]
    let _ = point;
}
