//! The SQLite backend's dedupe record: every id stored within the dedupe window, with the
//! digest of its content and when it was stored (table `seen`, in the file, so it survives
//! restarts and is shared by every process opening the file).

use rusqlite::{Connection, OptionalExtension, params};

use super::schema::storage_error;
use crate::content::{ContentDigest, seen_again};
use crate::error::{BusError, BusResult};

/// The table and the index that finds expired records.
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS seen (
    id TEXT PRIMARY KEY,
    digest BLOB NOT NULL,
    at_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_at ON seen(at_ms);
";

/// Expired records one store deletes at most: more than the one it adds, so that the table
/// shrinks back after a burst, and few, so that a store's cost stays flat.
const PRUNE_PER_STORE: i64 = 4;

/// How a store treats its id: compared with the record (`dedupe`), or recorded regardless.
pub(crate) struct Seen {
    /// The digest of the message's content.
    pub digest: ContentDigest,
    /// Whether an id seen within the window is refused (a duplicate or a conflict).
    pub dedupe: bool,
    /// The dedupe window in milliseconds.
    pub window_ms: i64,
}

impl Seen {
    /// Before storing `id` at `now`: true to store, false for a duplicate, or the conflict.
    pub(crate) fn admit(&self, conn: &Connection, id: &str, now: i64) -> BusResult<bool> {
        if !self.dedupe {
            return Ok(true);
        }
        let found: Option<(Vec<u8>, i64)> = conn
            .prepare_cached("SELECT digest, at_ms FROM seen WHERE id = ?1")
            .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))).optional())
            .map_err(storage_error)?;
        match found {
            Some((digest, at)) if at >= now - self.window_ms => {
                let stored = ContentDigest::from_slice(&digest).ok_or_else(|| {
                    BusError::Corrupt(format!(
                        "the content digest kept for id {id:?} is not 32 bytes"
                    ))
                })?;
                seen_again(id, stored, self.digest)
            }
            _ => Ok(true),
        }
    }

    /// Records `id` as stored at `now` (its window starts again) and deletes a few records
    /// past the window.
    pub(crate) fn record(&self, conn: &Connection, id: &str, now: i64) -> BusResult<()> {
        conn.prepare_cached("INSERT OR REPLACE INTO seen (id, digest, at_ms) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![id, &self.digest.as_bytes()[..], now]))
            .map_err(storage_error)?;
        conn.prepare_cached(
            "DELETE FROM seen WHERE id IN (SELECT id FROM seen WHERE at_ms < ?1 ORDER BY at_ms LIMIT ?2)",
        )
        .and_then(|mut s| s.execute(params![now - self.window_ms, PRUNE_PER_STORE]))
        .map_err(storage_error)?;
        Ok(())
    }
}
