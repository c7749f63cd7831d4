//! Pruning of the PostgreSQL store: old rows deleted from the oldest on, a bounded batch per
//! statement (each its own short transaction, so no lock is held for long and autovacuum
//! reclaims the space behind it), with a pause as long as the batch took between two; on a
//! server without autovacuum, the namespace's tables vacuumed after each prune.

use std::time::Instant;

use deadpool_postgres::Pool;

use super::errors::{pg_error, pool_error};
use crate::error::BusResult;
use crate::retention::PRUNE_BATCH;

/// One batch of messages: the next [`PRUNE_BATCH`] rows after $1 in row order; of them, those
/// published before $2 that no queue holds are deleted with their dedupe records. Returns the
/// rows deleted, the last row looked at, how many were looked at, and whether all were older
/// than the cut.
const MESSAGES_SQL: &str = "
WITH batch AS (
    SELECT seq, published_ms FROM messages WHERE seq > $1 ORDER BY seq LIMIT $3
), old AS (
    SELECT b.seq FROM batch b
    WHERE b.published_ms < $2 AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.seq = b.seq)
), gone AS (
    DELETE FROM messages WHERE seq IN (SELECT seq FROM old) RETURNING seq
), forgotten AS (
    DELETE FROM seen WHERE seq IN (SELECT seq FROM gone)
)
SELECT (SELECT COUNT(*) FROM gone), (SELECT MAX(seq) FROM batch), (SELECT COUNT(*) FROM batch),
       COALESCE((SELECT bool_and(published_ms < $2) FROM batch), false)";

/// One batch of dead letters recorded before $1, oldest first.
const DEAD_SQL: &str = "
WITH old AS (
    SELECT id FROM dead_letters WHERE at_ms < $1 ORDER BY id LIMIT $2
), gone AS (
    DELETE FROM dead_letters WHERE id IN (SELECT id FROM old) RETURNING id
)
SELECT COUNT(*) FROM gone";

/// One batch of effect records written before $1, oldest first, with their handled marks (so
/// that their keys may be written again).
const EFFECTS_SQL: &str = "
WITH old AS (
    SELECT id FROM effects WHERE at_ms < $1 ORDER BY id LIMIT $2
), gone AS (
    DELETE FROM effects WHERE id IN (SELECT id FROM old) RETURNING handler, message_id
), unmarked AS (
    DELETE FROM handled h USING gone g WHERE h.handler = g.handler AND h.message_id = g.message_id
)
SELECT COUNT(*) FROM gone";

/// Whether the server vacuums tables by itself (`autovacuum`, on by default and on every
/// managed service).
pub(super) async fn autovacuum_runs(c: &tokio_postgres::Client) -> BusResult<bool> {
    let row = c
        .query_one("SELECT current_setting('autovacuum') = 'on'", &[])
        .await
        .map_err(pg_error)?;
    Ok(row.get(0))
}

/// Vacuums every table of schema `schema` (for a server without autovacuum): the space of
/// the rows pruned and acknowledged since becomes free for new rows. A failure is logged, not
/// returned: the prune it follows has happened.
pub(super) async fn vacuum(pool: &Pool, schema: &str) {
    let done = async {
        let c = pool.get().await.map_err(pool_error)?;
        let rows = c
            .query(
                "SELECT format('%I.%I', schemaname, tablename) FROM pg_tables \
                 WHERE schemaname = $1 ORDER BY tablename",
                &[&schema],
            )
            .await
            .map_err(pg_error)?;
        let tables: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        if !tables.is_empty() {
            // Outside a transaction (VACUUM refuses one), as a simple query.
            c.batch_execute(&format!("VACUUM {}", tables.join(", ")))
                .await
                .map_err(pg_error)?;
        }
        BusResult::Ok(())
    };
    if let Err(e) = done.await {
        tracing::warn!(schema, error = %e, "vacuum after the prune failed");
    }
}

/// Deletes the messages published before `cut` that no queue holds; returns how many.
pub(super) async fn prune_messages(pool: &Pool, cut: i64) -> BusResult<u64> {
    let (mut deleted, mut from) = (0u64, 0i64);
    let batch = i64::try_from(PRUNE_BATCH).unwrap_or(i64::MAX);
    loop {
        let started = Instant::now();
        let c = pool.get().await.map_err(pool_error)?;
        let row = c
            .query_one(MESSAGES_SQL, &[&from, &cut, &batch])
            .await
            .map_err(pg_error)?;
        drop(c);
        deleted += row.get::<_, i64>(0).unsigned_abs();
        let looked: i64 = row.get(2);
        let all_older: bool = row.get(3);
        match row.get::<_, Option<i64>>(1) {
            Some(last) if looked == batch && all_older => from = last,
            _ => return Ok(deleted),
        }
        tokio::time::sleep(started.elapsed()).await;
    }
}

/// Deletes the dead letters recorded before `cut`; returns how many.
pub(super) async fn prune_dead(pool: &Pool, cut: i64) -> BusResult<u64> {
    prune_older(pool, DEAD_SQL, cut).await
}

/// Deletes the effect records written before `cut`; returns how many.
pub(super) async fn prune_effects(pool: &Pool, cut: i64) -> BusResult<u64> {
    prune_older(pool, EFFECTS_SQL, cut).await
}

/// Runs `sql` (one batch of rows older than $1, at most $2, answering how many it deleted)
/// until a batch finds fewer than a whole batch; returns the rows deleted.
async fn prune_older(pool: &Pool, sql: &str, cut: i64) -> BusResult<u64> {
    let mut deleted = 0u64;
    let batch = i64::try_from(PRUNE_BATCH).unwrap_or(i64::MAX);
    loop {
        let started = Instant::now();
        let c = pool.get().await.map_err(pool_error)?;
        let n: i64 = c
            .query_one(sql, &[&cut, &batch])
            .await
            .map_err(pg_error)?
            .get(0);
        drop(c);
        deleted += n.unsigned_abs();
        if n < batch {
            return Ok(deleted);
        }
        tokio::time::sleep(started.elapsed()).await;
    }
}
