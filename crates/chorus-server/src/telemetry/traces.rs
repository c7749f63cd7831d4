//! Trace contexts kept beside the messages: the `traceparent` of each published message by id,
//! for documents whose metadata cannot carry it (seed-003 handoff packets), and the latest one
//! of each correlation id, for a handoff published without one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS trace_contexts (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT NOT NULL UNIQUE,
    correlation_id TEXT,
    traceparent TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS trace_contexts_by_correlation ON trace_contexts (correlation_id, seq);
";

#[derive(Default)]
struct Memory {
    by_message: HashMap<String, String>,
    by_correlation: HashMap<String, String>,
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
            .map_err(|e| format!("cannot create the trace table in {}: {e}", path.display()))?;
        Ok(Traces {
            inner: Inner::Sqlite(Arc::new(Mutex::new(conn))),
        })
    }

    /// Keeps `traceparent` for `message_id` (replacing one kept before for that id) and as the
    /// latest trace of `correlation_id`.
    pub async fn keep(
        &self,
        message_id: &str,
        correlation_id: Option<&str>,
        traceparent: &str,
    ) -> Result<(), String> {
        match &self.inner {
            Inner::Memory(m) => {
                let mut m = m.lock().map_err(|_| "the trace map's lock was poisoned")?;
                m.by_message
                    .insert(message_id.to_owned(), traceparent.to_owned());
                if let Some(c) = correlation_id {
                    m.by_correlation
                        .insert(c.to_owned(), traceparent.to_owned());
                }
                Ok(())
            }
            Inner::Sqlite(conn) => {
                let (id, corr, tp) = (
                    message_id.to_owned(),
                    correlation_id.map(str::to_owned),
                    traceparent.to_owned(),
                );
                run(conn, move |c| {
                    c.execute(
                        "INSERT OR REPLACE INTO trace_contexts (message_id, correlation_id, traceparent) VALUES (?1, ?2, ?3)",
                        params![id, corr, tp],
                    )
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
                Ok(map.get(key).cloned())
            }
            Inner::Sqlite(conn) => {
                let sql = if correlation {
                    "SELECT traceparent FROM trace_contexts WHERE correlation_id = ?1 ORDER BY seq DESC LIMIT 1"
                } else {
                    "SELECT traceparent FROM trace_contexts WHERE message_id = ?1"
                };
                let key = key.to_owned();
                run(conn, move |c| {
                    c.query_row(sql, [key], |row| row.get(0)).optional()
                })
                .await
            }
        }
    }
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
        t.keep("h1", Some("task-1"), B).await.unwrap();
        t.keep("h1", Some("task-1"), A).await.unwrap();
        assert_eq!(
            t.of_message("h1").await.unwrap().as_deref(),
            Some(A),
            "the latest kept"
        );
        assert_eq!(
            t.of_correlation("task-1").await.unwrap().as_deref(),
            Some(A)
        );
        t.keep("h2", Some("task-1"), B).await.unwrap();
        assert_eq!(
            t.of_correlation("task-1").await.unwrap().as_deref(),
            Some(B),
            "the latest message's trace"
        );
        assert_eq!(t.of_message("h3").await.unwrap(), None);
        assert_eq!(t.of_correlation("task-2").await.unwrap(), None);
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
