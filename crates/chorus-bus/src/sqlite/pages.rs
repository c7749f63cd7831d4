//! Paged reads of the SQLite backend: dead letters, a task's messages, tasks and conversations.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::schema::{ENV_COLS, Key, count, envelope_at, json_error, storage_error};
use crate::delivery::{DeadLetter, Logged, TrackSummary};
use crate::error::BusResult;
use crate::retention::{Page, TrackCursor, number_cursor};

const DEAD_COLS: &str = "id, message_id, queue, reason, bytes, envelope, at_ms";

/// SQLite's integer for a count or a limit (saturating).
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The raw columns of a dead letter row.
type DeadRow = (
    i64,
    Option<String>,
    Option<String>,
    String,
    Vec<u8>,
    Option<String>,
    i64,
);

fn dead_row(r: &Row<'_>) -> rusqlite::Result<DeadRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

/// A dead letter from its row (the JSON columns parsed).
fn dead_letter(
    (id, message_id, queue, reason, bytes, envelope, at_ms): DeadRow,
) -> BusResult<DeadLetter> {
    let envelope = crate::delivery::dead_letter_envelope(envelope.as_deref(), &bytes)?;
    Ok(DeadLetter {
        id: id.to_string(),
        message_id,
        queue,
        reason: serde_json::from_str(&reason).map_err(json_error)?,
        bytes,
        envelope,
        at_ms: Some(at_ms),
    })
}

/// Up to `limit` dead letters after id `after`, oldest first.
pub(super) fn dead_letters(
    conn: &Connection,
    after: Option<&str>,
    limit: usize,
) -> BusResult<Page<DeadLetter>> {
    let after = int(number_cursor(after)?);
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {DEAD_COLS} FROM dead_letters WHERE id > ?1 ORDER BY id LIMIT ?2"
        ))
        .map_err(storage_error)?;
    let rows = stmt
        .query_map(params![after, int(limit).saturating_add(1)], dead_row)
        .map_err(storage_error)?;
    let mut items = Vec::new();
    for row in rows {
        items.push(dead_letter(row.map_err(storage_error)?)?);
    }
    let total = count(conn, "SELECT COUNT(*) FROM dead_letters", [])?;
    Ok(Page::cut(items, limit, Some(total), |d| d.id.clone()))
}

/// The dead letter `id`; none for an id that is not one (not a number, or unknown).
pub(super) fn find_dead(conn: &Connection, id: &str) -> BusResult<Option<DeadLetter>> {
    let Ok(id) = id.parse::<i64>() else {
        return Ok(None);
    };
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {DEAD_COLS} FROM dead_letters WHERE id = ?1"
        ))
        .map_err(storage_error)?;
    let mut rows = stmt.query_map([id], dead_row).map_err(storage_error)?;
    rows.next()
        .transpose()
        .map_err(storage_error)?
        .map(dead_letter)
        .transpose()
}

/// The dead letters deliveries of message `message_id` became (taken from a queue), oldest
/// first.
pub(super) fn dead_of(conn: &Connection, message_id: &str) -> BusResult<Vec<DeadLetter>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {DEAD_COLS} FROM dead_letters WHERE message_id = ?1 AND queue IS NOT NULL \
             ORDER BY id"
        ))
        .map_err(storage_error)?;
    let rows = stmt
        .query_map([message_id], dead_row)
        .map_err(storage_error)?;
    rows.map(|row| row.map_err(storage_error).and_then(dead_letter))
        .collect()
}

/// Up to `limit` messages of task `task_id` after row `after`, in publish order, with their
/// publish times.
pub(super) fn task_messages(
    conn: &Connection,
    task_id: &str,
    after: Option<&str>,
    limit: usize,
) -> BusResult<Page<Logged>> {
    let after = int(number_cursor(after)?);
    let sql = format!(
        "SELECT m.seq, m.published_ms, {ENV_COLS} FROM messages m \
         WHERE m.task_id = ?1 AND m.seq > ?2 ORDER BY m.seq LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(storage_error)?;
    let rows = stmt
        .query_map(params![task_id, after, int(limit).saturating_add(1)], |r| {
            Ok((r.get::<_, i64>(0)?, logged_at(r, 1)?))
        })
        .map_err(storage_error)?;
    let items: Vec<(i64, Logged)> = rows.collect::<Result<_, _>>().map_err(storage_error)?;
    let total = count(
        conn,
        "SELECT COUNT(*) FROM messages WHERE task_id = ?1",
        [task_id],
    )?;
    Ok(Page::cut_numbered(items, limit, total))
}

/// The latest stored message with this id, with its publish time.
pub(super) fn locate(conn: &Connection, id: &str) -> BusResult<Option<Logged>> {
    let sql = format!(
        "SELECT m.published_ms, {ENV_COLS} FROM messages m WHERE m.id = ?1 \
         ORDER BY m.published_ms DESC, m.seq DESC LIMIT 1"
    );
    conn.prepare_cached(&sql)
        .map_err(storage_error)?
        .query_row([id], |r| logged_at(r, 0))
        .optional()
        .map_err(storage_error)
}

/// The publish time at column `i` and the envelope after it.
fn logged_at(row: &Row<'_>, i: usize) -> rusqlite::Result<Logged> {
    Ok(Logged {
        published_ms: row.get(i)?,
        envelope: envelope_at(row, i + 1)?,
    })
}

/// Up to `limit` values of `key`, latest activity first (then the value, descending), after
/// cursor `after`, with their message counts and times.
pub(super) fn tracks(
    conn: &Connection,
    key: Key,
    after: Option<&str>,
    limit: usize,
) -> BusResult<Page<TrackSummary>> {
    let cursor = TrackCursor::parse(after)?;
    let column = key.column();
    let sql = format!(
        "SELECT {column}, COUNT(*), MIN(published_ms), MAX(published_ms) FROM messages \
         WHERE {column} IS NOT NULL GROUP BY {column} \
         HAVING ?1 IS NULL OR MAX(published_ms) < ?1 OR (MAX(published_ms) = ?1 AND {column} < ?2) \
         ORDER BY MAX(published_ms) DESC, {column} DESC LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(storage_error)?;
    let (last_ms, id) = match &cursor {
        Some(c) => (Some(c.last_ms), c.id.as_str()),
        None => (None, ""),
    };
    let rows = stmt
        .query_map(params![last_ms, id, int(limit).saturating_add(1)], |r| {
            Ok(TrackSummary {
                id: r.get(0)?,
                messages: r.get::<_, i64>(1)?.unsigned_abs(),
                first_ms: r.get(2)?,
                last_ms: r.get(3)?,
            })
        })
        .map_err(storage_error)?;
    let items: Vec<TrackSummary> = rows.collect::<Result<_, _>>().map_err(storage_error)?;
    let total = count(
        conn,
        &format!("SELECT COUNT(DISTINCT {column}) FROM messages WHERE {column} IS NOT NULL"),
        [],
    )?;
    Ok(Page::cut(items, limit, Some(total), TrackCursor::of))
}
