//! Trace contexts kept beside the messages: the `traceparent` of each published message by id,
//! for documents whose metadata cannot carry it (seed-003 handoff packets), and the latest one
//! of each correlation id, for a handoff published without one; each with the time it was kept,
//! so that old ones can be pruned.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chorus_bus::now_ms;
use rusqlite::{Connection, OptionalExtension, params};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS trace_contexts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    correlation_id TEXT,
    traceparent TEXT NOT NULL,
    at_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS trace_contexts_by_correlation ON trace_contexts (correlation_id, seq);
";

/// Run after [`SCHEMA`]: the time column on a table made before it existed (its rows count as
/// kept now), and its index.
const TIMES: &str = "CREATE INDEX IF NOT EXISTS trace_contexts_by_time ON trace_contexts (at_ms);";

/// A kept trace context and when it was kept (Unix milliseconds).
type Kept = (String, i64);

const BY_MESSAGE: &str = "SELECT traceparent FROM trace_contexts WHERE message_id = ?1";

#[derive(Default)]
struct Memory {
    by_message: HashMap<String, Kept>,
    by_correlation: HashMap<String, Kept>,
}

enum Inner {
    Memory(Mutex<Memory>),
    Sqlite(Arc<Mutex<Connection>>),
}

/// Where the server keeps message id → `traceparent` (in memory, or a table of a SQLite file).
pub struct Traces {
    inner: Inner,
}

impl Traces {
    /// Kept in memory, lost when the server stops.
    pub fn in_memory() -> Traces {
        Traces {
            inner: Inner::Memory(Mutex::new(Memory::default())),
        }
    }

    /// Kept in the table `trace_contexts` of the SQLite file at `path` (created when missing;
    /// other tables of the file are untouched).
    pub fn open(path: &Path) -> Result<Traces, String> {
        let conn =
            Connection::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| e.to_string())?;
        conn.execute_batch(SCHEMA)
            .and_then(|()| add_times(&conn))
            .map_err(|e| format!("cannot create the trace table in {}: {e}", path.display()))?;
        Ok(Traces {
            inner: Inner::Sqlite(Arc::new(Mutex::new(conn))),
        })
    }

    /// Keeps `traceparent` for `message_id`, and as the latest trace of `correlation_id`,
    /// unless one is kept for that id already (a message stored before, or a publish of it
    /// under way): true when this call kept it.
    pub async fn keep(
        &self,
        message_id: &str,
        correlation_id: Option<&str>,
        traceparent: &str,
    ) -> Result<bool, String> {
        match &self.inner {
            Inner::Memory(m) => {
                let mut m = m.lock().map_err(|_| "the trace map's lock was poisoned")?;
                if m.by_message.contains_key(message_id) {
                    return Ok(false);
                }
                let kept = (traceparent.to_owned(), now_ms());
                m.by_message.insert(message_id.to_owned(), kept.clone());
                if let Some(c) = correlation_id {
                    m.by_correlation.insert(c.to_owned(), kept);
                }
                Ok(true)
            }
            Inner::Sqlite(conn) => {
                let (id, corr, tp) = (
                    message_id.to_owned(),
                    correlation_id.map(str::to_owned),
                    traceparent.to_owned(),
                );
                run(conn, move |c| {
                    c.prepare_cached(
                        "INSERT OR IGNORE INTO trace_contexts (message_id, correlation_id, traceparent, at_ms) VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![id, corr, tp, now_ms()])
                    .map(|inserted| inserted == 1)
                })
                .await
            }
        }
    }

    /// Forgets what [`Traces::keep`] kept for `message_id` (its publish was refused).
    pub async fn forget(&self, message_id: &str) -> Result<(), String> {
        match &self.inner {
            Inner::Memory(m) => {
                let mut m = m.lock().map_err(|_| "the trace map's lock was poisoned")?;
                if let Some(gone) = m.by_message.remove(message_id) {
                    m.by_correlation.retain(|_, kept| *kept != gone);
                }
                Ok(())
            }
            Inner::Sqlite(conn) => {
                let id = message_id.to_owned();
                run(conn, move |c| {
                    c.prepare_cached("DELETE FROM trace_contexts WHERE message_id = ?1")?
                        .execute([id])
                        .map(drop)
                })
                .await
            }
        }
    }

    /// The `traceparent` kept for `message_id`.
    pub async fn of_message(&self, message_id: &str) -> Result<Option<String>, String> {
        self.lookup(message_id, false).await
    }

    /// The `traceparent` kept for each of `message_ids`, in their order, looked up together.
    pub async fn of_messages(
        &self,
        message_ids: Vec<String>,
    ) -> Result<Vec<Option<String>>, String> {
        match &self.inner {
            Inner::Memory(m) => {
                let m = m.lock().map_err(|_| "the trace map's lock was poisoned")?;
                Ok(message_ids
                    .iter()
                    .map(|id| m.by_message.get(id).map(|(tp, _)| tp.clone()))
                    .collect())
            }
            Inner::Sqlite(conn) => {
                run(conn, move |c| {
                    let mut select = c.prepare_cached(BY_MESSAGE)?;
                    message_ids
                        .iter()
                        .map(|id| select.query_row([id], |row| row.get(0)).optional())
                        .collect()
                })
                .await
            }
        }
    }

    /// The `traceparent` of the latest message kept under `correlation_id`.
    pub async fn of_correlation(&self, correlation_id: &str) -> Result<Option<String>, String> {
        self.lookup(correlation_id, true).await
    }

    async fn lookup(&self, key: &str, correlation: bool) -> Result<Option<String>, String> {
        match &self.inner {
            Inner::Memory(m) => {
                let m = m.lock().map_err(|_| "the trace map's lock was poisoned")?;
                let map = if correlation {
                    &m.by_correlation
                } else {
                    &m.by_message
                };
                Ok(map.get(key).map(|(tp, _)| tp.clone()))
            }
            Inner::Sqlite(conn) => {
                let sql = if correlation {
                    "SELECT traceparent FROM trace_contexts WHERE correlation_id = ?1 ORDER BY seq DESC LIMIT 1"
                } else {
                    BY_MESSAGE
                };
                let key = key.to_owned();
                // Through the statement cache: every delivery and settle looks its message up.
                run(conn, move |c| {
                    c.prepare_cached(sql)?
                        .query_row([key], |row| row.get(0))
                        .optional()
                })
                .await
            }
        }
    }
}

impl Traces {
    /// Removes the trace contexts kept before `before_ms` (Unix milliseconds); returns how many
    /// message ids lost theirs.
    pub async fn prune(&self, before_ms: i64) -> Result<u64, String> {
        match &self.inner {
            Inner::Memory(m) => {
                let mut m = m.lock().map_err(|_| "the trace map's lock was poisoned")?;
                let before = m.by_message.len();
                m.by_message.retain(|_, (_, at)| *at >= before_ms);
                m.by_correlation.retain(|_, (_, at)| *at >= before_ms);
                Ok((before - m.by_message.len()) as u64)
            }
            Inner::Sqlite(conn) => {
                run(conn, move |c| {
                    c.execute("DELETE FROM trace_contexts WHERE at_ms < ?1", [before_ms])
                        .map(|n| n as u64)
                })
                .await
            }
        }
    }
}

/// Gives a table made before trace contexts had times its time column (existing rows are
/// timed now, so they are kept a full retention from here), and the index on it.
fn add_times(conn: &Connection) -> rusqlite::Result<()> {
    let has_times = conn
        .prepare("SELECT 1 FROM pragma_table_info('trace_contexts') WHERE name = 'at_ms'")?
        .exists([])?;
    if !has_times {
        conn.execute_batch(
            "ALTER TABLE trace_contexts ADD COLUMN at_ms INTEGER NOT NULL DEFAULT 0",
        )?;
        conn.execute("UPDATE trace_contexts SET at_ms = ?1", [now_ms()])?;
    }
    conn.execute_batch(TIMES)
}

/// Runs `f` on the connection off the async runtime's threads.
async fn run<T: Send + 'static>(
    conn: &Arc<Mutex<Connection>>,
    f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
) -> Result<T, String> {
    let conn = Arc::clone(conn);
    tokio::task::spawn_blocking(move || {
        let conn = conn
            .lock()
            .map_err(|_| "the trace table's lock was poisoned".to_owned())?;
        f(&conn).map_err(|e| format!("trace table: {e}"))
    })
    .await
    .map_err(|e| e.to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const B: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    async fn exercise(t: &Traces) {
        assert!(t.keep("h1", Some("task-1"), A).await.unwrap());
        assert!(
            !t.keep("h1", Some("task-1"), B).await.unwrap(),
            "an id's context is kept once: a second publish of it does not replace it"
        );
        assert_eq!(t.of_message("h1").await.unwrap().as_deref(), Some(A));
        assert_eq!(
            t.of_correlation("task-1").await.unwrap().as_deref(),
            Some(A)
        );
        // A refused publish takes its context back.
        assert!(t.keep("refused", Some("task-2"), B).await.unwrap());
        t.forget("refused").await.unwrap();
        assert_eq!(t.of_message("refused").await.unwrap(), None);
        assert_eq!(t.of_correlation("task-2").await.unwrap(), None);
        t.keep("h2", Some("task-1"), B).await.unwrap();
        assert_eq!(
            t.of_correlation("task-1").await.unwrap().as_deref(),
            Some(B),
            "the latest message's trace"
        );
        assert_eq!(t.of_message("h3").await.unwrap(), None);
        assert_eq!(
            t.of_messages(vec!["h2".into(), "h3".into(), "h1".into()])
                .await
                .unwrap(),
            [Some(B.to_owned()), None, Some(A.to_owned())]
        );
        assert_eq!(t.of_correlation("task-2").await.unwrap(), None);
    }

    async fn prunes(t: &Traces) {
        t.keep("old", Some("corr-old"), A).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let cut = now_ms();
        tokio::time::sleep(Duration::from_millis(20)).await;
        t.keep("new", Some("corr-new"), B).await.unwrap();
        assert_eq!(t.prune(cut).await.unwrap(), 1);
        assert_eq!(t.of_message("old").await.unwrap(), None);
        assert_eq!(t.of_correlation("corr-old").await.unwrap(), None);
        assert_eq!(t.of_message("new").await.unwrap().as_deref(), Some(B));
        assert_eq!(
            t.of_correlation("corr-new").await.unwrap().as_deref(),
            Some(B)
        );
    }

    #[tokio::test]
    async fn old_trace_contexts_are_pruned_in_memory_and_in_sqlite() {
        prunes(&Traces::in_memory()).await;
        let dir = tempfile::tempdir().unwrap();
        prunes(&Traces::open(&dir.path().join("side.db")).unwrap()).await;
    }

    #[tokio::test]
    async fn a_table_made_before_times_gets_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side.db");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(
            "CREATE TABLE trace_contexts (seq INTEGER PRIMARY KEY AUTOINCREMENT, \
             message_id TEXT NOT NULL UNIQUE, correlation_id TEXT, traceparent TEXT NOT NULL);",
        )
        .unwrap();
        old.execute(
            "INSERT INTO trace_contexts (message_id, traceparent) VALUES ('h0', ?1)",
            [A],
        )
        .unwrap();
        drop(old);
        let opened = now_ms();
        let t = Traces::open(&path).unwrap();
        assert_eq!(
            t.prune(opened - 1).await.unwrap(),
            0,
            "timed when the table got times"
        );
        assert_eq!(t.of_message("h0").await.unwrap().as_deref(), Some(A));
        assert_eq!(t.prune(now_ms() + 1).await.unwrap(), 1);
    }

    #[tokio::test]
    async fn memory_and_sqlite_agree() {
        exercise(&Traces::in_memory()).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("side.db");
        exercise(&Traces::open(&path).unwrap()).await;
        let reopened = Traces::open(&path).unwrap();
        assert_eq!(reopened.of_message("h2").await.unwrap().as_deref(), Some(B));
    }
}
