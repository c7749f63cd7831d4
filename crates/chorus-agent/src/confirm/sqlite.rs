//! Confirmations in one SQLite file: they survive restarts and can be shared by processes.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chorus_bus::Page;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::page::{self, Cursor};
use super::{ConfirmError, Confirmation, ConfirmationState, Confirmations, rules};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS confirmations (
    id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    call_id TEXT NOT NULL,
    arguments TEXT NOT NULL,
    task_id TEXT,
    state TEXT NOT NULL,
    decided_by TEXT,
    note TEXT,
    created_at_ms INTEGER NOT NULL,
    UNIQUE (agent, call_id)
);
CREATE INDEX IF NOT EXISTS confirmations_by_state ON confirmations (state, created_at_ms);
";

const COLUMNS: &str =
    "id, agent, tool, call_id, arguments, task_id, state, decided_by, note, created_at_ms";

/// A [`Confirmations`] store in a SQLite file (created when missing).
#[derive(Debug, Clone)]
pub struct SqliteConfirmations {
    conn: Arc<Mutex<Connection>>,
}

fn store_error(e: impl std::fmt::Display) -> ConfirmError {
    ConfirmError::Store(e.to_string())
}

fn row_to_confirmation(row: &Row<'_>) -> rusqlite::Result<Confirmation> {
    let state: String = row.get(6)?;
    let state = ConfirmationState::parse(&state).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            6,
            rusqlite::types::Type::Text,
            format!("unknown confirmation state {state:?}").into(),
        )
    })?;
    let created: i64 = row.get(9)?;
    Ok(Confirmation {
        id: row.get(0)?,
        agent: row.get(1)?,
        tool: row.get(2)?,
        call_id: row.get(3)?,
        arguments: row.get(4)?,
        task_id: row.get(5)?,
        state,
        decided_by: row.get(7)?,
        note: row.get(8)?,
        created_at_ms: u64::try_from(created).unwrap_or(0),
    })
}

fn find(conn: &Connection, id: &str) -> rusqlite::Result<Option<Confirmation>> {
    conn.query_row(
        &format!("SELECT {COLUMNS} FROM confirmations WHERE id = ?1"),
        [id],
        row_to_confirmation,
    )
    .optional()
}

impl SqliteConfirmations {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, ConfirmError> {
        let conn = Connection::open(path)
            .map_err(|e| ConfirmError::Store(format!("cannot open {}: {e}", path.display())))?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(store_error)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(store_error)?;
        conn.execute_batch(SCHEMA).map_err(store_error)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection off the async runtime's threads.
    async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, ConfirmError> + Send + 'static,
    ) -> Result<T, ConfirmError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut conn = conn
                .lock()
                .map_err(|_| store_error("the connection's lock was poisoned"))?;
            f(&mut conn)
        })
        .await
        .map_err(store_error)?
    }

    /// Reads `id`, applies `change` and writes it back, in one immediate transaction.
    async fn change(
        &self,
        id: &str,
        change: impl FnOnce(&mut Confirmation) -> Result<(), ConfirmError> + Send + 'static,
    ) -> Result<Confirmation, ConfirmError> {
        let id = id.to_owned();
        self.run(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(store_error)?;
            let mut c = find(&tx, &id)
                .map_err(store_error)?
                .ok_or_else(|| ConfirmError::NotFound(id.clone()))?;
            change(&mut c)?;
            tx.execute(
                "UPDATE confirmations SET state = ?2, decided_by = ?3, note = ?4 WHERE id = ?1",
                params![c.id, c.state.as_str(), c.decided_by, c.note],
            )
            .map_err(store_error)?;
            tx.commit().map_err(store_error)?;
            Ok(c)
        })
        .await
    }
}

#[async_trait]
impl Confirmations for SqliteConfirmations {
    async fn request(&self, pending: Confirmation) -> Result<Confirmation, ConfirmError> {
        self.run(move |conn| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(store_error)?;
            tx.execute(
                &format!(
                    "INSERT OR IGNORE INTO confirmations ({COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', NULL, NULL, ?7)"
                ),
                params![
                    pending.id,
                    pending.agent,
                    pending.tool,
                    pending.call_id,
                    pending.arguments,
                    pending.task_id,
                    i64::try_from(pending.created_at_ms).unwrap_or(i64::MAX),
                ],
            )
            .map_err(store_error)?;
            let stored = tx
                .query_row(
                    &format!(
                        "SELECT {COLUMNS} FROM confirmations WHERE agent = ?1 AND call_id = ?2"
                    ),
                    params![pending.agent, pending.call_id],
                    row_to_confirmation,
                )
                .map_err(store_error)?;
            tx.commit().map_err(store_error)?;
            Ok(stored)
        })
        .await
    }

    async fn get(&self, id: &str) -> Result<Option<Confirmation>, ConfirmError> {
        let id = id.to_owned();
        self.run(move |conn| find(conn, &id).map_err(store_error))
            .await
    }

    async fn list(
        &self,
        state: Option<ConfirmationState>,
    ) -> Result<Vec<Confirmation>, ConfirmError> {
        self.run(move |conn| {
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM confirmations WHERE ?1 IS NULL OR state = ?1 \
                     ORDER BY created_at_ms, rowid"
                ))
                .map_err(store_error)?;
            let rows = stmt
                .query_map([state.map(ConfirmationState::as_str)], row_to_confirmation)
                .map_err(store_error)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(store_error)
        })
        .await
    }

    async fn decide(
        &self,
        id: &str,
        approve: bool,
        by: &str,
        note: Option<String>,
    ) -> Result<Confirmation, ConfirmError> {
        let by = by.to_owned();
        self.change(id, move |c| rules::decide(c, approve, &by, note))
            .await
    }

    async fn consume(&self, id: &str, arguments: &str) -> Result<Confirmation, ConfirmError> {
        let arguments = arguments.to_owned();
        self.change(id, move |c| rules::consume(c, &arguments))
            .await
    }

    async fn page(
        &self,
        state: Option<ConfirmationState>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<Confirmation>, ConfirmError> {
        let cursor = Cursor::parse(after)?;
        self.run(move |conn| {
            let state = state.map(ConfirmationState::as_str);
            let (ms, id) = match cursor {
                Some(c) => (
                    Some(i64::try_from(c.created_at_ms).unwrap_or(i64::MAX)),
                    c.id,
                ),
                None => (None, String::new()),
            };
            let mut stmt = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM confirmations WHERE (?1 IS NULL OR state = ?1) \
                     AND (?2 IS NULL OR created_at_ms > ?2 OR (created_at_ms = ?2 AND id > ?3)) \
                     ORDER BY created_at_ms, id LIMIT ?4"
                ))
                .map_err(store_error)?;
            let want = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
            let rows = stmt
                .query_map(params![state, ms, id, want], row_to_confirmation)
                .map_err(store_error)?;
            let items = rows.collect::<Result<Vec<_>, _>>().map_err(store_error)?;
            let total: i64 = conn
                .query_row(
                    "SELECT COUNT(*) FROM confirmations WHERE ?1 IS NULL OR state = ?1",
                    [state],
                    |r| r.get(0),
                )
                .map_err(store_error)?;
            Ok(page::cut(items, limit, total.unsigned_abs()))
        })
        .await
    }

    async fn prune(&self, before_ms: u64) -> Result<u64, ConfirmError> {
        let before = i64::try_from(before_ms).unwrap_or(i64::MAX);
        self.run(move |conn| {
            conn.execute(
                "DELETE FROM confirmations WHERE state IN ('rejected', 'consumed') \
                 AND created_at_ms < ?1",
                [before],
            )
            .map(|n| n as u64)
            .map_err(store_error)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> (tempfile::TempDir, SqliteConfirmations) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteConfirmations::open(&dir.path().join("confirmations.db")).unwrap();
        (dir, store)
    }

    mod suite {
        crate::confirm::suite::confirmations_suite!(super::temp().1);
    }

    #[tokio::test]
    async fn survives_reopening() {
        let (dir, store) = temp();
        let c = store
            .request(Confirmation::pending("ops", "rm", "c1", "{}", None))
            .await
            .unwrap();
        store.decide(&c.id, true, "admin", None).await.unwrap();
        drop(store);
        let again = SqliteConfirmations::open(&dir.path().join("confirmations.db")).unwrap();
        let found = again.get(&c.id).await.unwrap().unwrap();
        assert_eq!(found.state, ConfirmationState::Approved);
        assert_eq!(found.arguments, "{}");
    }

    /// Two connections to one file race to consume one approval: exactly one wins.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn racing_consumers_one_wins() {
        let (dir, store) = temp();
        let path = dir.path().join("confirmations.db");
        for round in 0..20 {
            let c = store
                .request(Confirmation::pending(
                    "ops",
                    "rm",
                    format!("c{round}"),
                    "{}",
                    None,
                ))
                .await
                .unwrap();
            store.decide(&c.id, true, "admin", None).await.unwrap();
            let racers: Vec<_> = (0..4)
                .map(|_| {
                    let other = SqliteConfirmations::open(&path).unwrap();
                    let id = c.id.clone();
                    tokio::spawn(async move { other.consume(&id, "{}").await })
                })
                .collect();
            let mut wins = 0;
            for racer in racers {
                match racer.await.unwrap() {
                    Ok(used) => {
                        assert_eq!(used.state, ConfirmationState::Consumed);
                        wins += 1;
                    }
                    Err(ConfirmError::WrongState { state, .. }) => {
                        assert_eq!(state, ConfirmationState::Consumed);
                    }
                    Err(other) => panic!("unexpected refusal: {other}"),
                }
            }
            assert_eq!(wins, 1, "round {round}");
        }
    }
}
