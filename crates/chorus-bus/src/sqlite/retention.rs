//! Pruning of the SQLite backend: old rows are deleted from the oldest on, a bounded batch per
//! writer job, so that publishes and acks interleave with a long prune.

use std::collections::HashSet;
use std::time::Instant;

use rusqlite::{Connection, params};

use super::schema::storage_error;
use super::writer::Writer;
use crate::error::BusResult;
use crate::retention::PRUNE_BATCH;

/// Runs `batch` (given the last row of the batch before, 0 at first) as one writer job after
/// another until one says nothing older is left; returns the rows deleted. Between two jobs it
/// waits as long as the last one ran: the writer prunes at most half of the time, and the
/// publishes and acks that arrive meanwhile are committed without waiting for a batch.
pub(super) async fn in_batches<F>(writer: &Writer, batch: F) -> BusResult<u64>
where
    F: Fn(&Connection, i64) -> BusResult<Batch> + Clone + Send + 'static,
{
    let (mut deleted, mut from) = (0, 0);
    loop {
        let job = batch.clone();
        let (done, took) = writer
            .call(false, move |c| {
                let started = Instant::now();
                job(c, from).map(|done| (done, started.elapsed()))
            })
            .await?;
        deleted += done.deleted;
        from = done.last;
        if !done.more {
            return Ok(deleted);
        }
        tokio::time::sleep(took).await;
    }
}

/// How one batch went: rows deleted, the last row looked at, and whether rows older than the
/// cut may remain after it.
pub(super) struct Batch {
    pub deleted: u64,
    pub last: i64,
    pub more: bool,
}

/// The next (oldest) rows of `table` after row `from`: (row id, time).
fn oldest(conn: &Connection, sql: &str, from: i64) -> BusResult<Vec<(i64, i64)>> {
    let mut stmt = conn.prepare_cached(sql).map_err(storage_error)?;
    let rows = stmt
        .query_map(params![from, PRUNE_BATCH as i64], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .map_err(storage_error)?;
    rows.collect::<Result<_, _>>().map_err(storage_error)
}

/// The rows of `rows` older than `cut`, up to the first one that is not (rows are in id
/// order, which is publish order), and whether the batch ended before such a row.
fn older(rows: &[(i64, i64)], cut: i64) -> (Vec<i64>, bool) {
    let old: Vec<i64> = rows
        .iter()
        .take_while(|(_, at)| *at < cut)
        .map(|(id, _)| *id)
        .collect();
    let more = old.len() == rows.len() && rows.len() == PRUNE_BATCH;
    (old, more)
}

/// Deletes one batch of messages published before `cut`, after row `from`; a message a queue
/// still holds (a delivery row points at it) is kept.
pub(super) fn prune_messages(conn: &Connection, cut: i64, from: i64) -> BusResult<Batch> {
    let rows = oldest(
        conn,
        "SELECT seq, published_ms FROM messages WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        from,
    )?;
    let (old, more) = older(&rows, cut);
    let (Some(&lo), Some(&hi)) = (old.first(), old.last()) else {
        return Ok(Batch {
            deleted: 0,
            last: from,
            more: false,
        });
    };
    let waiting: HashSet<i64> = {
        let mut stmt = conn
            .prepare_cached("SELECT seq FROM deliveries WHERE seq BETWEEN ?1 AND ?2")
            .map_err(storage_error)?;
        let rows = stmt
            .query_map([lo, hi], |r| r.get(0))
            .map_err(storage_error)?;
        rows.collect::<Result<_, _>>().map_err(storage_error)?
    };
    let mut delete = conn
        .prepare_cached("DELETE FROM messages WHERE seq = ?1")
        .map_err(storage_error)?;
    let mut deleted = 0;
    for seq in old.iter().filter(|s| !waiting.contains(s)) {
        deleted += delete.execute([seq]).map_err(storage_error)? as u64;
    }
    Ok(Batch {
        deleted,
        last: hi,
        more,
    })
}

/// Deletes one batch of dead letters recorded before `cut`.
pub(super) fn prune_dead(conn: &Connection, cut: i64) -> BusResult<Batch> {
    let rows = oldest(
        conn,
        "SELECT id, at_ms FROM dead_letters WHERE id > ?1 ORDER BY id LIMIT ?2",
        0,
    )?;
    let (old, more) = older(&rows, cut);
    let Some(&hi) = old.last() else {
        return Ok(Batch {
            deleted: 0,
            last: 0,
            more: false,
        });
    };
    let deleted = conn
        .prepare_cached("DELETE FROM dead_letters WHERE id <= ?1")
        .and_then(|mut s| s.execute([hi]))
        .map_err(storage_error)? as u64;
    Ok(Batch {
        deleted,
        last: hi,
        more,
    })
}

/// Deletes one batch of effect records written before `cut`, after row `from`, with their
/// handled marks (so that their keys may be written again).
pub(super) fn prune_effects(conn: &Connection, cut: i64, from: i64) -> BusResult<Batch> {
    let rows = oldest(
        conn,
        "SELECT id, at_ms FROM effects WHERE id > ?1 ORDER BY id LIMIT ?2",
        from,
    )?;
    let (old, more) = older(&rows, cut);
    let Some(&hi) = old.last() else {
        return Ok(Batch {
            deleted: 0,
            last: from,
            more: false,
        });
    };
    conn.prepare_cached(
        "DELETE FROM handled WHERE (handler, message_id) IN \
         (SELECT handler, message_id FROM effects WHERE id > ?1 AND id <= ?2)",
    )
    .and_then(|mut s| s.execute([from, hi]))
    .map_err(storage_error)?;
    let deleted = conn
        .prepare_cached("DELETE FROM effects WHERE id > ?1 AND id <= ?2")
        .and_then(|mut s| s.execute([from, hi]))
        .map_err(storage_error)? as u64;
    Ok(Batch {
        deleted,
        last: hi,
        more,
    })
}

/// When the oldest message a queue still holds was published.
pub(super) fn oldest_waiting(conn: &Connection) -> BusResult<Option<i64>> {
    conn.prepare_cached(
        "SELECT MIN(m.published_ms) FROM deliveries d JOIN messages m ON m.seq = d.seq",
    )
    .and_then(|mut s| s.query_row([], |r| r.get(0)))
    .map_err(storage_error)
}
