//! The floor chorus on SQLite is measured against, in the same run: the same number of rows of
//! the same size in a file beside chorus's (same disk, WAL, the durability chorus gives a
//! publish: `synchronous=FULL` on a commit that holds an insert, `NORMAL` on one that only takes
//! rows), written by one thread that commits everything waiting at once (group commit with no
//! linger and no cap but chorus's `max_batch`). One producer keeps as many inserts in flight as
//! chorus's producers do; consumers take 64 rows at a time with one `DELETE … RETURNING`, and
//! look again after 1 ms when they found none. No chorus code runs.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, channel};

use rusqlite::{Connection, params};
use tokio::sync::oneshot;

use super::errors::storage_error;
use crate::bench_report::{BenchReport, FloorLoad, drive_floor};
use crate::error::{BusError, BusResult};

/// One operation for the floor's writer thread.
enum Op {
    /// Insert a row sent at `sent_us` (after the start), answered after its commit.
    Insert {
        sent_us: i64,
        done: oneshot::Sender<BusResult<()>>,
    },
    /// Delete up to 64 of the oldest rows, answered with their send times after the commit.
    Take {
        done: oneshot::Sender<BusResult<Vec<i64>>>,
    },
}

/// Runs the floor's load on a fresh file beside `bench_path` (chorus's own bench file), removed
/// afterwards.
pub async fn floor(bench_path: &Path, opts: &FloorLoad) -> BusResult<BenchReport> {
    let path = beside(bench_path);
    remove(&path);
    let report = load(&path, opts).await;
    remove(&path);
    report
}

/// `NAME.floor` in the folder of `bench_path`.
fn beside(bench_path: &Path) -> PathBuf {
    let mut name = bench_path
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "chorus-bench.db".into());
    name.push(".floor");
    bench_path.with_file_name(name)
}

/// Removes the floor's file and its WAL and shared-memory files.
fn remove(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

fn open(path: &Path) -> BusResult<Connection> {
    let conn = Connection::open(path).map_err(storage_error)?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
        .map_err(storage_error)?;
    conn.execute_batch(
        "CREATE TABLE floor (id INTEGER PRIMARY KEY, sent_us INTEGER NOT NULL, body BLOB NOT NULL)",
    )
    .map_err(storage_error)?;
    Ok(conn)
}

async fn load(path: &Path, opts: &FloorLoad) -> BusResult<BenchReport> {
    let conn = open(path)?;
    let (ops, rx) = channel::<Op>();
    let (body, max_batch) = (vec![b'x'; opts.size], opts.max_batch.max(1));
    let writer = std::thread::Builder::new()
        .name("chorus-bench-floor".into())
        .spawn(move || write(conn, rx, body, max_batch))
        .map_err(|e| BusError::Storage(format!("cannot start the floor's writer: {e}")))?;
    let report = drive(&ops, opts).await;
    drop(ops);
    let _ = writer.join();
    report
}

/// The producer and the consumers, through the writer's channel `ops`.
async fn drive(ops: &Sender<Op>, opts: &FloorLoad) -> BusResult<BenchReport> {
    let insert = |sent_us: i64| {
        let (done, inserted) = oneshot::channel();
        let sent = ops.send(Op::Insert { sent_us, done });
        async move {
            sent.map_err(|_| stopped())?;
            inserted.await.map_err(|_| stopped())?
        }
    };
    let taker = ops.clone();
    let take = move || {
        let (done, taken) = oneshot::channel();
        let sent = taker.send(Op::Take { done });
        async move {
            sent.map_err(|_| stopped())?;
            taken.await.map_err(|_| stopped())?
        }
    };
    drive_floor(opts, insert, take).await
}

fn stopped() -> BusError {
    BusError::Storage("the floor's writer thread stopped".into())
}

/// The writer thread: each turn takes every operation waiting (at most `max_batch`), runs them
/// in one transaction and answers them after its commit.
fn write(conn: Connection, rx: Receiver<Op>, body: Vec<u8>, max_batch: usize) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let durable = batch.iter().any(|op| matches!(op, Op::Insert { .. }));
        match commit(&conn, &batch, &body, durable) {
            Ok(taken) => {
                let mut taken = taken.into_iter();
                for op in batch {
                    match op {
                        Op::Insert { done, .. } => drop(done.send(Ok(()))),
                        Op::Take { done } => drop(done.send(Ok(taken.next().unwrap_or_default()))),
                    }
                }
            }
            Err(e) => {
                for op in batch {
                    match op {
                        Op::Insert { done, .. } => drop(done.send(Err(e.clone()))),
                        Op::Take { done } => drop(done.send(Err(e.clone()))),
                    }
                }
            }
        }
    }
}

/// One transaction of `batch`: the rows each take removed, in the order of the takes.
fn commit(conn: &Connection, batch: &[Op], body: &[u8], durable: bool) -> BusResult<Vec<Vec<i64>>> {
    conn.execute_batch(match durable {
        true => "PRAGMA synchronous=FULL; BEGIN IMMEDIATE",
        false => "PRAGMA synchronous=NORMAL; BEGIN IMMEDIATE",
    })
    .map_err(storage_error)?;
    let run = || -> rusqlite::Result<Vec<Vec<i64>>> {
        let mut taken = Vec::new();
        for op in batch {
            match op {
                Op::Insert { sent_us, .. } => {
                    conn.prepare_cached("INSERT INTO floor (sent_us, body) VALUES (?1, ?2)")?
                        .execute(params![sent_us, body])?;
                }
                Op::Take { .. } => {
                    let mut take = conn.prepare_cached(
                        "DELETE FROM floor WHERE id IN (SELECT id FROM floor ORDER BY id LIMIT 64) \
                         RETURNING sent_us",
                    )?;
                    let rows = take.query_map([], |r| r.get(0))?;
                    taken.push(rows.collect::<rusqlite::Result<Vec<i64>>>()?);
                }
            }
        }
        conn.execute_batch("COMMIT")?;
        Ok(taken)
    };
    run().map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        storage_error(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_floor_takes_back_every_row_it_wrote_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let bench = dir.path().join("bench.db");
        let opts = FloorLoad {
            messages: 3_000,
            size: 1024,
            consumers: 3,
            in_flight: 256,
            max_batch: 1024,
        };
        let report = floor(&bench, &opts).await.unwrap();
        assert_eq!(
            (report.sent, report.received, report.lost),
            (3_000, 3_000, 0)
        );
        assert!(report.throughput_msgs_per_s > 0.0);
        assert!(report.p50_ms <= report.p99_ms);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
