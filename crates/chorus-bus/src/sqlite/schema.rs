//! Tables, statements and row mapping of the SQLite backend.

use rusqlite::{Connection, Row, params};

pub(crate) use super::errors::{json_error, storage_error};
use super::seen::Seen;
use crate::delivery::{DeadReason, Delivery, EffectRecord, LogEntry};
use crate::envelope::{Envelope, Priority, Rank};
use crate::error::{BusError, BusResult};
use crate::fair::FairScheduler;
use crate::routing::{Binding, Filter};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    published_ms INTEGER NOT NULL,
    recipients TEXT NOT NULL,
    handoff_type TEXT,
    priority INTEGER NOT NULL,
    expires_ms INTEGER,
    task_id TEXT,
    correlation_id TEXT,
    conversation_id TEXT,
    conv_seq INTEGER,
    sender TEXT,
    bytes BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_id ON messages(id, published_ms);
CREATE INDEX IF NOT EXISTS messages_task ON messages(task_id) WHERE task_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_corr ON messages(correlation_id) WHERE correlation_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_conv ON messages(conversation_id, conv_seq) WHERE conversation_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS deliveries (
    token INTEGER PRIMARY KEY,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL,
    seq INTEGER NOT NULL REFERENCES messages(seq),
    attempts INTEGER NOT NULL,
    visible_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_ready ON deliveries(queue, priority, token);
CREATE TABLE IF NOT EXISTS bindings (
    queue TEXT NOT NULL, kind TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (queue, kind, value)
);
CREATE TABLE IF NOT EXISTS dead_letters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id TEXT,
    queue TEXT,
    reason TEXT NOT NULL,
    bytes BLOB NOT NULL,
    envelope TEXT,
    at_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS dead_letters_message ON dead_letters(message_id, id)
    WHERE message_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS handled (
    handler TEXT NOT NULL, message_id TEXT NOT NULL,
    PRIMARY KEY (handler, message_id)
);
CREATE TABLE IF NOT EXISTS effects (
    id INTEGER PRIMARY KEY, handler TEXT NOT NULL, message_id TEXT NOT NULL, record BLOB NOT NULL,
    at_ms INTEGER NOT NULL DEFAULT 0
);
-- An agent's journal is read by handler on every tool call and step: without it, each read
-- scanned every handler's records.
CREATE INDEX IF NOT EXISTS effects_handler ON effects(handler, id);
";

pub(super) const ENV_COLS: &str = "m.id, m.recipients, m.handoff_type, m.priority, m.expires_ms, m.task_id, \
     m.correlation_id, m.conversation_id, m.sender, m.bytes";

/// The visible deliveries of queue ?1 at time ?2, at most ?3 of each priority, in one statement.
static FETCH_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    (0..4)
        .rev()
        .map(|rank| {
            format!(
                "SELECT * FROM (SELECT d.token, d.attempts, {ENV_COLS} FROM deliveries d \
                 JOIN messages m ON m.seq = d.seq WHERE d.queue = ?1 AND d.priority = {rank} \
                 AND d.visible_ms <= ?2 ORDER BY d.token LIMIT ?3)"
            )
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
});

/// Sets WAL and full fsync, checks the file for damage and creates the tables.
pub(crate) fn open(conn: &Connection) -> BusResult<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(storage_error)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .map_err(storage_error)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(BusError::Storage(format!(
            "the database refused WAL mode (journal_mode is {mode})"
        )));
    }
    conn.execute_batch("PRAGMA synchronous=FULL")
        .map_err(storage_error)?;
    let mut stmt = conn.prepare("PRAGMA quick_check").map_err(storage_error)?;
    let problems: Vec<String> = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(storage_error)?
        .collect::<Result<_, _>>()
        .map_err(storage_error)?;
    if problems != ["ok"] {
        return Err(BusError::Corrupt(problems.join("; ")));
    }
    conn.execute_batch(SCHEMA).map_err(storage_error)?;
    number_dead_letters_once(conn)?;
    time_effects_once(conn)
}

/// Gives the effects of a file made before they had a time (`at_ms`, which the pruner reads)
/// that column; their records count as written at 0, the oldest there are.
fn time_effects_once(conn: &Connection) -> BusResult<()> {
    let timed: bool = conn
        .query_row(
            "SELECT COUNT(*) FROM pragma_table_info('effects') WHERE name = 'at_ms'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(storage_error)?
        > 0;
    if !timed {
        conn.execute_batch("ALTER TABLE effects ADD COLUMN at_ms INTEGER NOT NULL DEFAULT 0")
            .map_err(storage_error)?;
    }
    Ok(())
}

/// Gives a file made before dead-letter ids were numbered once (`INTEGER PRIMARY KEY` without
/// `AUTOINCREMENT`, which hands the highest id out again after its letter is deleted, so an
/// admin replaying or deleting by an id they were shown could reach another letter) the
/// numbering of today's table, keeping its letters and their ids. One transaction; a process
/// that finds it done skips it.
fn number_dead_letters_once(conn: &Connection) -> BusResult<()> {
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'dead_letters'",
            [],
            |r| r.get(0),
        )
        .map_err(storage_error)?;
    if sql.contains("AUTOINCREMENT") {
        return Ok(());
    }
    conn.execute_batch(
        "BEGIN IMMEDIATE;
         ALTER TABLE dead_letters RENAME TO dead_letters_before;
         DROP INDEX IF EXISTS dead_letters_message;",
    )
    .map_err(storage_error)?;
    let moved = conn.execute_batch(SCHEMA).and_then(|()| {
        conn.execute_batch(
            "INSERT INTO dead_letters (id, message_id, queue, reason, bytes, envelope, at_ms)
                     SELECT id, message_id, queue, reason, bytes, envelope, at_ms
                     FROM dead_letters_before;
                 DROP TABLE dead_letters_before;
                 COMMIT;",
        )
    });
    if let Err(e) = moved {
        let _ = conn.execute_batch("ROLLBACK");
        return Err(storage_error(e));
    }
    Ok(())
}

pub(super) fn envelope_at(row: &Row<'_>, i: usize) -> rusqlite::Result<Envelope> {
    let recipients: String = row.get(i + 1)?;
    let rank: u8 = row.get(i + 3)?;
    Ok(Envelope {
        id: row.get(i)?,
        recipients: serde_json::from_str(&recipients).unwrap_or_default(),
        handoff_type: row.get(i + 2)?,
        priority: Priority::from_rank(rank).unwrap_or(Priority::Medium),
        expires_at_ms: row.get(i + 4)?,
        task_id: row.get(i + 5)?,
        correlation_id: row.get(i + 6)?,
        conversation_id: row.get(i + 7)?,
        sender: row.get(i + 8)?,
        bytes: row.get::<_, Vec<u8>>(i + 9)?.into(),
    })
}

/// Stores a message and one delivery per queue; false for a duplicate, a conflict for an id
/// stored with other content (see [`Seen::admit`]).
pub(crate) fn store(
    conn: &Connection,
    env: &Envelope,
    queues: &[String],
    seen: &Seen,
    now: i64,
) -> BusResult<bool> {
    if !seen.admit(conn, env, now)? {
        return Ok(false);
    }
    let conv_seq: Option<i64> = match &env.conversation_id {
        None => None,
        Some(c) => conn
            .prepare_cached(
                "SELECT COALESCE(MAX(conv_seq), 0) + 1 FROM messages WHERE conversation_id = ?1",
            )
            .and_then(|mut s| s.query_row([c], |r| r.get(0)))
            .map_err(storage_error)?,
    };
    let recipients = serde_json::to_string(&env.recipients).map_err(json_error)?;
    conn.prepare_cached(
        "INSERT INTO messages (id, published_ms, recipients, handoff_type, priority, expires_ms, \
         task_id, correlation_id, conversation_id, conv_seq, sender, bytes) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )
    .and_then(|mut s| {
        s.execute(params![
            env.id,
            now,
            recipients,
            env.handoff_type,
            env.priority.rank(),
            env.expires_at_ms,
            env.task_id,
            env.correlation_id,
            env.conversation_id,
            conv_seq,
            env.sender,
            &env.bytes[..]
        ])
    })
    .map_err(storage_error)?;
    let seq = conn.last_insert_rowid();
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO deliveries (queue, priority, seq, attempts, visible_ms) VALUES (?1, ?2, ?3, 0, 0)",
        )
        .map_err(storage_error)?;
    for q in queues {
        insert
            .execute(params![q, env.priority.rank(), seq])
            .map_err(storage_error)?;
    }
    Ok(true)
}

/// Claims up to `max` visible deliveries of `queue` in fair priority order.
pub(crate) fn fetch(
    conn: &Connection,
    queue: &str,
    max: usize,
    scheduler: &mut FairScheduler,
    now: i64,
    deadline: i64,
) -> BusResult<Vec<Delivery>> {
    let mut select = conn.prepare_cached(&FETCH_SQL).map_err(storage_error)?;
    let limit = i64::try_from(max).unwrap_or(i64::MAX);
    let mut levels: [std::collections::VecDeque<(i64, u32, Envelope)>; 4] = Default::default();
    let rows = select
        .query_map(params![queue, now, limit], |r| {
            Ok((r.get(0)?, r.get(1)?, envelope_at(r, 2)?))
        })
        .map_err(storage_error)?;
    for row in rows {
        let row = row.map_err(storage_error)?;
        levels[row.2.priority.rank() as usize].push_back(row);
    }
    // Each level in token (publish) order, whatever order the union returned them in.
    for level in &mut levels {
        level.make_contiguous().sort_unstable_by_key(|r| r.0);
    }
    let plan = scheduler.plan(levels.each_ref().map(|l| l.len()), max);
    let mut claim = conn
        .prepare_cached("UPDATE deliveries SET attempts = ?1, visible_ms = ?2 WHERE token = ?3")
        .map_err(storage_error)?;
    let name: std::sync::Arc<str> = std::sync::Arc::from(queue);
    let mut out = Vec::with_capacity(plan.len());
    for p in plan {
        let Some((token, attempts, env)) = levels[p.rank() as usize].pop_front() else {
            continue;
        };
        let attempt = attempts + 1;
        claim
            .execute(params![attempt, deadline, token])
            .map_err(storage_error)?;
        out.push(Delivery {
            envelope: std::sync::Arc::new(env),
            queue: name.clone(),
            attempt,
            token: format!("{token}:{attempt}"),
        });
    }
    Ok(out)
}

fn token_parts(d: &Delivery) -> BusResult<(i64, u32)> {
    d.token
        .split_once(':')
        .and_then(|(t, a)| Some((t.parse().ok()?, a.parse().ok()?)))
        .ok_or_else(|| stale(d))
}

fn stale(d: &Delivery) -> BusError {
    BusError::StaleDelivery {
        token: d.token.clone(),
        message_id: d.envelope.id.clone(),
    }
}

/// Deletes the delivery (ack) when this attempt still holds it.
pub(crate) fn settle(conn: &Connection, d: &Delivery) -> BusResult<()> {
    let (token, attempt) = token_parts(d)?;
    let n = conn
        .prepare_cached("DELETE FROM deliveries WHERE token = ?1 AND attempts = ?2")
        .and_then(|mut s| s.execute(params![token, attempt]))
        .map_err(storage_error)?;
    if n == 0 { Err(stale(d)) } else { Ok(()) }
}

/// Makes the delivery visible again at `visible_ms` when this attempt still holds it.
pub(crate) fn postpone(conn: &Connection, d: &Delivery, visible_ms: i64) -> BusResult<()> {
    let (token, attempt) = token_parts(d)?;
    let n = conn
        .prepare_cached("UPDATE deliveries SET visible_ms = ?1 WHERE token = ?2 AND attempts = ?3")
        .and_then(|mut s| s.execute(params![visible_ms, token, attempt]))
        .map_err(storage_error)?;
    if n == 0 { Err(stale(d)) } else { Ok(()) }
}

/// Inserts a dead letter; returns its id.
pub(crate) fn insert_dead(
    conn: &Connection,
    message_id: Option<&str>,
    queue: Option<&str>,
    reason: &DeadReason,
    bytes: &[u8],
    envelope: Option<&Envelope>,
    now: i64,
) -> BusResult<String> {
    let (reason, envelope) = crate::delivery::dead_letter_columns(reason, envelope)?;
    conn.execute(
        "INSERT INTO dead_letters (message_id, queue, reason, bytes, envelope, at_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![message_id, queue, reason, bytes, envelope, now],
    )
    .map_err(storage_error)?;
    Ok(conn.last_insert_rowid().to_string())
}

/// The number a `SELECT COUNT(*) …` query gives.
pub(super) fn count(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> BusResult<u64> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.query_row(params, |r| r.get::<_, i64>(0)))
        .map(i64::unsigned_abs)
        .map_err(storage_error)
}

/// The number of dead letters.
pub(crate) fn dead_count(conn: &Connection) -> BusResult<u64> {
    count(conn, "SELECT COUNT(*) FROM dead_letters", [])
}

/// Records `message_id` as handled with its effect; false when already recorded.
pub(crate) fn record_handled(
    conn: &Connection,
    handler: &str,
    message_id: &str,
    record: &[u8],
) -> BusResult<bool> {
    let fresh = conn
        .execute(
            "INSERT OR IGNORE INTO handled (handler, message_id) VALUES (?1, ?2)",
            params![handler, message_id],
        )
        .map_err(storage_error)?
        == 1;
    if fresh {
        conn.execute(
            "INSERT INTO effects (handler, message_id, record, at_ms) VALUES (?1, ?2, ?3, ?4)",
            params![handler, message_id, record, crate::now_ms()],
        )
        .map_err(storage_error)?;
    }
    Ok(fresh)
}

/// True when `handler` has handled `message_id`.
pub(crate) fn is_handled(conn: &Connection, handler: &str, message_id: &str) -> BusResult<bool> {
    conn.prepare_cached("SELECT 1 FROM handled WHERE handler = ?1 AND message_id = ?2")
        .and_then(|mut s| s.exists(params![handler, message_id]))
        .map_err(storage_error)
}

/// The effects of `handler` in commit order.
pub(crate) fn effects(conn: &Connection, handler: &str) -> BusResult<Vec<EffectRecord>> {
    let mut stmt = conn
        .prepare("SELECT message_id, record FROM effects WHERE handler = ?1 ORDER BY id")
        .map_err(storage_error)?;
    let rows = stmt
        .query_map([handler], |r| {
            Ok(EffectRecord {
                handler: handler.to_owned(),
                message_id: r.get(0)?,
                record: r.get(1)?,
            })
        })
        .map_err(storage_error)?;
    rows.collect::<Result<_, _>>().map_err(storage_error)
}

/// How many effects `handler` has.
pub(crate) fn effect_count(conn: &Connection, handler: &str) -> BusResult<u64> {
    count(
        conn,
        "SELECT COUNT(*) FROM effects WHERE handler = ?1",
        [handler],
    )
}

/// Messages whose `column` (task_id or correlation_id) equals `value`, in publish order.
pub(crate) fn by_key(conn: &Connection, column: Key, value: &str) -> BusResult<Vec<Envelope>> {
    let column = column.column();
    let sql = format!("SELECT {ENV_COLS} FROM messages m WHERE m.{column} = ?1 ORDER BY m.seq");
    let mut stmt = conn.prepare_cached(&sql).map_err(storage_error)?;
    let rows = stmt
        .query_map([value], |r| envelope_at(r, 0))
        .map_err(storage_error)?;
    rows.collect::<Result<_, _>>().map_err(storage_error)
}

/// Which tracking key to look up.
#[derive(Clone, Copy)]
pub(crate) enum Key {
    Task,
    Correlation,
    Conversation,
}

impl Key {
    pub(super) fn column(self) -> &'static str {
        match self {
            Key::Task => "task_id",
            Key::Correlation => "correlation_id",
            Key::Conversation => "conversation_id",
        }
    }
}

/// Deliveries of `queue` not yet acknowledged.
pub(crate) fn depth(conn: &Connection, queue: &str) -> BusResult<u64> {
    count(
        conn,
        "SELECT COUNT(*) FROM deliveries WHERE queue = ?1",
        [queue],
    )
}

/// When the next delivery of `queue` becomes visible (Unix ms): a delayed one, or a held one
/// whose ack deadline ends; none when the queue has no delivery.
pub(crate) fn next_visible(conn: &Connection, queue: &str) -> BusResult<Option<i64>> {
    conn.prepare_cached("SELECT MIN(visible_ms) FROM deliveries WHERE queue = ?1")
        .and_then(|mut s| s.query_row([queue], |r| r.get(0)))
        .map_err(storage_error)
}

/// SQLite's `data_version`: it moves when another connection commits to the file.
/// Writes the file's header field `user_version` back unchanged: a real write, so a file that
/// cannot be written fails (the bus does not use the field otherwise).
pub(crate) fn probe_write(conn: &Connection) -> BusResult<()> {
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(storage_error)?;
    conn.execute_batch(&format!("PRAGMA user_version = {version}"))
        .map_err(storage_error)
}

pub(crate) fn data_version(conn: &Connection) -> BusResult<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
        .map_err(storage_error)
}

/// The conversation's log entries after `after`.
pub(crate) fn conversation(
    conn: &Connection,
    conversation_id: &str,
    after: u64,
    limit: usize,
) -> BusResult<Vec<LogEntry>> {
    let sql = format!(
        "SELECT m.conv_seq, {ENV_COLS} FROM messages m WHERE m.conversation_id = ?1 \
         AND m.conv_seq > ?2 ORDER BY m.conv_seq LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(storage_error)?;
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt
        .query_map(params![conversation_id, after, limit], |r| {
            Ok(LogEntry {
                seq: r.get::<_, i64>(0)?.unsigned_abs(),
                envelope: envelope_at(r, 1)?,
            })
        })
        .map_err(storage_error)?;
    rows.collect::<Result<_, _>>().map_err(storage_error)
}

/// Adds a binding (idempotent).
pub(crate) fn bind(conn: &Connection, b: &Binding) -> BusResult<()> {
    let (kind, value) = b.filter.parts();
    conn.execute(
        "INSERT OR IGNORE INTO bindings (queue, kind, value) VALUES (?1, ?2, ?3)",
        params![b.queue, kind, value],
    )
    .map_err(storage_error)?;
    Ok(())
}

/// All bindings.
pub(crate) fn bindings(conn: &Connection) -> BusResult<Vec<Binding>> {
    let mut stmt = conn
        .prepare_cached("SELECT queue, kind, value FROM bindings ORDER BY rowid")
        .map_err(storage_error)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(storage_error)?;
    let mut out = Vec::new();
    for row in rows {
        let (queue, kind, value) = row.map_err(storage_error)?;
        let filter = Filter::from_parts(&kind, &value)
            .ok_or_else(|| BusError::Corrupt(format!("unknown binding kind {kind:?}")))?;
        out.push(Binding { queue, filter });
    }
    Ok(out)
}

/// Deletes a dead letter; an error when it does not exist.
pub(crate) fn remove_dead(conn: &Connection, id: &str) -> BusResult<()> {
    let n = conn
        .execute("DELETE FROM dead_letters WHERE id = ?1", [id])
        .map_err(storage_error)?;
    if n == 0 {
        return Err(BusError::UnknownDeadLetter(id.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The steps of the query plan of `sql` with one parameter.
    fn plan(sql: &str, param: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("plan.db")).unwrap();
        open(&conn).unwrap();
        conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap()
            .query_map([param], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// Asserts that `plan` reads through `index` and sorts nothing.
    fn assert_indexed(plan: &[String], index: &str) {
        assert!(plan.iter().any(|step| step.contains(index)), "{plan:?}");
        assert!(
            !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }

    /// A file made by `old_sql` (an older chorus), opened twice (the second open finds the
    /// migration done), then opened for the test.
    fn migrated(path: &std::path::Path, old_sql: &str) -> Connection {
        let old = Connection::open(path).unwrap();
        old.execute_batch(old_sql).unwrap();
        drop(old);
        for _ in 0..2 {
            let conn = Connection::open(path).unwrap();
            open(&conn).unwrap();
        }
        Connection::open(path).unwrap()
    }

    #[test]
    fn an_older_dead_letter_table_is_numbered_once_and_keeps_its_letters() {
        let dir = tempfile::tempdir().unwrap();
        let conn = migrated(
            &dir.path().join("old.db"),
            "CREATE TABLE dead_letters (id INTEGER PRIMARY KEY, message_id TEXT, queue TEXT,
                 reason TEXT NOT NULL, bytes BLOB NOT NULL, envelope TEXT, at_ms INTEGER NOT NULL);
             INSERT INTO dead_letters VALUES (1, 'm-1', 'q', '{\"kind\":\"no_route\"}', x'7b', NULL, 5);
             INSERT INTO dead_letters VALUES (2, 'm-2', 'q', '{\"kind\":\"no_route\"}', x'7b', NULL, 6);
             DELETE FROM dead_letters WHERE id = 2;",
        );
        let kept: Vec<(i64, String)> = conn
            .prepare("SELECT id, message_id FROM dead_letters")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(kept, [(1, "m-1".to_owned())]);
        conn.execute(
            "INSERT INTO dead_letters (message_id, reason, bytes, at_ms) VALUES ('m-3', '{}', x'7b', 7)",
            [],
        )
        .unwrap();
        conn.execute("DELETE FROM dead_letters WHERE id = 2", [])
            .unwrap();
        conn.execute(
            "INSERT INTO dead_letters (message_id, reason, bytes, at_ms) VALUES ('m-4', '{}', x'7b', 8)",
            [],
        )
        .unwrap();
        let newest: i64 = conn
            .query_row("SELECT MAX(id) FROM dead_letters", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            newest, 3,
            "the id of a deleted letter is not handed out again"
        );
        let indexed: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'dead_letters_message' AND tbl_name = 'dead_letters'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(indexed, 1, "the index by message id is on the new table");
    }

    #[test]
    fn older_effects_get_a_time_once_and_count_as_the_oldest() {
        let dir = tempfile::tempdir().unwrap();
        let conn = migrated(
            &dir.path().join("old.db"),
            "CREATE TABLE effects (id INTEGER PRIMARY KEY, handler TEXT NOT NULL,
                 message_id TEXT NOT NULL, record BLOB NOT NULL);
             INSERT INTO effects (handler, message_id, record) VALUES ('journal/a/t', 'k1', x'7b');",
        );
        assert!(record_handled(&conn, "journal/a/t", "k2", b"{}").unwrap());
        let times: Vec<(String, i64)> = conn
            .prepare("SELECT message_id, at_ms FROM effects ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(times[0], ("k1".to_owned(), 0), "the older record");
        assert_eq!(times[1].0, "k2");
        assert!(
            times[1].1 > 1_700_000_000_000,
            "a new record has its time: {times:?}"
        );
        assert_eq!(effect_count(&conn, "journal/a/t").unwrap(), 2);
    }

    #[test]
    fn a_journal_is_read_through_its_index() {
        let plan = plan(
            "SELECT message_id, record FROM effects WHERE handler = ?1 ORDER BY id",
            "agent\u{0}task",
        );
        assert_indexed(&plan, "USING INDEX effects_handler");
    }

    #[test]
    fn the_dead_letter_of_a_message_is_found_through_its_index() {
        let plan = plan(
            "SELECT id FROM dead_letters WHERE message_id = ?1 AND queue IS NOT NULL ORDER BY id",
            "m-1",
        );
        assert_indexed(&plan, "dead_letters_message");
    }
}
