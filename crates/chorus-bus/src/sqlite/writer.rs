//! The single writer thread: batches concurrent operations into one fsync'd transaction.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::config::DbConfig;

use crate::error::{BusError, BusResult};

/// Called after the batch's commit with its outcome.
type Finish = Box<dyn FnOnce(BusResult<()>) + Send>;

/// One operation: runs inside the batch transaction (or learns that the batch failed to start)
/// and reports whether its own statements succeeded.
type Run = Box<dyn FnOnce(Result<&Connection, BusError>) -> (bool, Finish) + Send>;

/// An operation and whether its commit must reach the disk before it is answered.
struct Job {
    durable: bool,
    run: Run,
}

/// How long the writer waits for more operations to share a commit after the first arrives.
const LINGER: Duration = Duration::from_micros(300);

/// Handle to the writer thread; dropping it stops the thread.
pub(crate) struct Writer {
    jobs: Sender<Job>,
}

impl Writer {
    /// Starts the thread that owns `conn`; at most `max_batch` operations share a commit.
    pub(crate) fn spawn(conn: Connection, max_batch: usize) -> BusResult<Writer> {
        // The writer's statements are prepared once and kept: with the planner free to look at
        // bound values (the bundled SQLite has STAT4), a statement whose `LIMIT ?` changed since
        // its last run is compiled again, which was a tenth of the server's time when inbox
        // streams fetched as many deliveries as they had room for.
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(super::schema::storage_error)?;
        let (jobs, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("chorus-bus-sqlite".into())
            .spawn(move || run(conn, rx, max_batch.max(1)))
            .map_err(|e| BusError::Storage(format!("cannot start the writer thread: {e}")))?;
        Ok(Writer { jobs })
    }

    /// Runs `f` in the next batch; its result is returned once the batch committed. When
    /// `durable`, the commit is fsync'd first; otherwise (claims, acks, reads) it survives a
    /// process crash but may be lost with the machine, which at-least-once delivery tolerates.
    pub(crate) async fn call<T, F>(&self, durable: bool, f: F) -> BusResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> BusResult<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<BusResult<T>>();
        let run: Run = Box::new(move |conn| match conn {
            Err(e) => {
                let finish: Finish = Box::new(move |_| {
                    let _ = tx.send(Err(e));
                });
                (false, finish)
            }
            Ok(conn) => {
                let result = f(conn);
                let ok = result.is_ok();
                let finish: Finish = Box::new(move |commit| {
                    let _ = tx.send(commit.and(result));
                });
                (ok, finish)
            }
        });
        self.jobs
            .send(Job { durable, run })
            .map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

fn stopped() -> BusError {
    BusError::Storage("the sqlite writer thread stopped".into())
}

fn run(conn: Connection, rx: Receiver<Job>, max_batch: usize) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        let until = Instant::now() + LINGER;
        while batch.len() < max_batch {
            match rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(job) => batch.push(job),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        // One transaction for the batch, fsync'd when a job in it must be durable. Claims, acks
        // and reads run first: jobs of one batch were concurrent, so that order is one their
        // callers could have seen. They wait for the publishes' fsync (about 0.2 ms here), and
        // a commit that fails fails them all, reads included; two commits per batch (quick,
        // then durable) cost the writer a second commit of the same pages, 8-10 % of the
        // throughput of the bus and of the server (docs/performance.md).
        batch.sort_by_key(|j| j.durable);
        commit_batch(&conn, batch);
    }
}

fn commit_batch(conn: &Connection, batch: Vec<Job>) {
    let durable = batch.iter().any(|j| j.durable);
    let sync = if durable {
        "PRAGMA synchronous=FULL; BEGIN IMMEDIATE"
    } else {
        "PRAGMA synchronous=NORMAL; BEGIN IMMEDIATE"
    };
    if let Err(e) = conn.execute_batch(sync) {
        let e = super::schema::storage_error(e);
        for job in batch {
            let (_, finish) = (job.run)(Err(e.clone()));
            finish(Err(e.clone()));
        }
        return;
    }
    let mut finishes = Vec::with_capacity(batch.len());
    let mut broken: Option<BusError> = None;
    for job in batch {
        let savepoint = run_cached(conn, "SAVEPOINT job");
        let (ok, finish) = match savepoint {
            Ok(()) => (job.run)(Ok(conn)),
            Err(e) => (job.run)(Err(super::schema::storage_error(e))),
        };
        let end = if ok {
            run_cached(conn, "RELEASE job")
        } else {
            run_cached(conn, "ROLLBACK TO job").and_then(|()| run_cached(conn, "RELEASE job"))
        };
        if let Err(e) = end {
            // A job's writes could not be isolated: the whole batch is given up.
            broken.get_or_insert(super::schema::storage_error(e));
        }
        finishes.push(finish);
    }
    if durable {
        crate::crash::reached(crate::crash::points::SQLITE_BEFORE_COMMIT);
    }
    let outcome = match broken {
        Some(e) => Err(e),
        None => conn
            .execute_batch("COMMIT")
            .map_err(super::schema::storage_error),
    };
    if outcome.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for finish in finishes {
        finish(outcome.clone());
    }
}

/// Runs a statement without parameters through the connection's statement cache.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}
