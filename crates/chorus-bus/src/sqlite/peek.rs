//! `peek` on the SQLite backend: a queue's deliveries with their messages, read in the
//! writer's batch without changing a row.

use rusqlite::{Connection, params};

use super::schema::{ENV_COLS, envelope_at, storage_error};
use crate::error::BusResult;
use crate::peek::{PEEK_LIMIT, Queued, QueuedState};

/// The deliveries of queue ?1 with priority ?2, oldest first, at most ?3.
static PEEK_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
        "SELECT d.attempts, d.visible_ms, {ENV_COLS} FROM deliveries d \
         JOIN messages m ON m.seq = d.seq WHERE d.queue = ?1 AND d.priority = ?2 \
         ORDER BY d.token LIMIT ?3"
    )
});

/// Up to `limit` deliveries of `queue` not yet acknowledged, highest priority first, then in
/// publish order, seen at `now`. A row does not record whether a consumer holds it or a nack
/// delayed it: one not visible yet is [`QueuedState::HeldOrDelayed`].
pub(super) fn queued(
    conn: &Connection,
    queue: &str,
    limit: usize,
    now: i64,
) -> BusResult<Vec<Queued>> {
    let limit = limit.min(PEEK_LIMIT);
    let mut select = conn.prepare_cached(&PEEK_SQL).map_err(storage_error)?;
    let mut out = Vec::new();
    for rank in (0..4u8).rev() {
        let left = i64::try_from(limit - out.len()).unwrap_or(i64::MAX);
        if left == 0 {
            break;
        }
        let rows = select
            .query_map(params![queue, rank, left], |r| {
                let visible_ms: i64 = r.get(1)?;
                Ok(Queued {
                    attempts: Some(r.get(0)?),
                    state: QueuedState::hidden_until(visible_ms, now),
                    envelope: envelope_at(r, 2)?,
                })
            })
            .map_err(storage_error)?;
        for row in rows {
            out.push(row.map_err(storage_error)?);
        }
    }
    Ok(out)
}
