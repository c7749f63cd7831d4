//! The SQLite backend's dedupe check: the record of an id is its latest row in `messages`
//! (found by the `messages_id` index on `(id, published_ms)`), kept in the file, so it survives
//! restarts and is shared by every process opening the file.
//!
//! The row holds the content itself, so nothing more is written per message: the digests are
//! computed only when an id comes again. (A separate table of ids and digests, with an insert
//! and a prune per message, about halved the bench's group-commit throughput; see
//! docs/performance.md.) The record lasts as long as the log keeps the message, which is why
//! the dedupe window defaults to the log's retention.

use rusqlite::{Connection, OptionalExtension, params};

use super::errors::storage_error;
use crate::content::ContentDigest;
use crate::envelope::Envelope;
use crate::error::BusResult;
use crate::error::seen_again;

/// How a store treats its id.
pub(crate) struct Seen {
    /// Whether an id stored within the window is refused (a duplicate or a conflict).
    pub dedupe: bool,
    /// The dedupe window in milliseconds.
    pub window_ms: i64,
}

impl Seen {
    /// Before storing `env` at `now`: true to store, false for a duplicate, or the conflict.
    pub(crate) fn admit(&self, conn: &Connection, env: &Envelope, now: i64) -> BusResult<bool> {
        if !self.dedupe {
            return Ok(true);
        }
        let stored: Option<Vec<u8>> = conn
            .prepare_cached(
                "SELECT bytes FROM messages WHERE id = ?1 AND published_ms >= ?2 \
                 ORDER BY published_ms DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![env.id, now - self.window_ms], |r| r.get(0))
                    .optional()
            })
            .map_err(storage_error)?;
        match stored {
            None => Ok(true),
            // A retry sending the same bytes is not parsed.
            Some(bytes) if bytes == env.bytes[..] => Ok(false),
            Some(bytes) => seen_again(
                &env.id,
                ContentDigest::of(&bytes),
                ContentDigest::of(&env.bytes),
            ),
        }
    }
}
