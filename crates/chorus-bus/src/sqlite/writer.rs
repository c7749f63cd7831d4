//! The single writer thread: batches concurrent operations into one fsync'd transaction.

use std::sync::mpsc::{Receiver, Sender, channel};

use rusqlite::Connection;

use crate::error::{BusError, BusResult};

/// Called after the batch's commit with its outcome.
type Finish = Box<dyn FnOnce(BusResult<()>) + Send>;

/// One operation: runs inside the batch transaction (or learns that the batch failed to start)
/// and reports whether its own statements succeeded.
type Job = Box<dyn FnOnce(Result<&Connection, BusError>) -> (bool, Finish) + Send>;

/// Handle to the writer thread; dropping it stops the thread.
pub(crate) struct Writer {
    jobs: Sender<Job>,
}

impl Writer {
    /// Starts the thread that owns `conn`; at most `max_batch` operations share a commit.
    pub(crate) fn spawn(conn: Connection, max_batch: usize) -> BusResult<Writer> {
        let (jobs, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("chorus-bus-sqlite".into())
            .spawn(move || run(conn, rx, max_batch.max(1)))
            .map_err(|e| BusError::Storage(format!("cannot start the writer thread: {e}")))?;
        Ok(Writer { jobs })
    }

    /// Runs `f` in the next batch; its result is returned once the batch is durable.
    pub(crate) async fn call<T, F>(&self, f: F) -> BusResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> BusResult<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<BusResult<T>>();
        let job: Job = Box::new(move |conn| match conn {
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
        self.jobs.send(job).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

fn stopped() -> BusError {
    BusError::Storage("the sqlite writer thread stopped".into())
}

fn run(conn: Connection, rx: Receiver<Job>, max_batch: usize) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        commit_batch(&conn, batch);
    }
}

fn commit_batch(conn: &Connection, batch: Vec<Job>) {
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let e = super::schema::storage_error(e);
        for job in batch {
            let (_, finish) = job(Err(e.clone()));
            finish(Err(e.clone()));
        }
        return;
    }
    let mut finishes = Vec::with_capacity(batch.len());
    let mut broken: Option<BusError> = None;
    for job in batch {
        let savepoint = conn.execute_batch("SAVEPOINT job");
        let (ok, finish) = match savepoint {
            Ok(()) => job(Ok(conn)),
            Err(e) => job(Err(super::schema::storage_error(e))),
        };
        let end = if ok {
            "RELEASE job"
        } else {
            "ROLLBACK TO job; RELEASE job"
        };
        if let Err(e) = conn.execute_batch(end) {
            // A job's writes could not be isolated: the whole batch is given up.
            broken.get_or_insert(super::schema::storage_error(e));
        }
        finishes.push(finish);
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
