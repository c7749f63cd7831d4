//! The floor chorus on PostgreSQL is measured against, in the same run: the same number of
//! rows of the same size, each a plain `INSERT` in its own commit (the server's durability
//! settings, as chorus's), from one producer with as many in flight and as many connections
//! as chorus's pool; consumers taking 64 at a time with one `DELETE … FOR UPDATE SKIP LOCKED
//! … RETURNING`, and looking again after 1 ms when they found none. No chorus code runs.

use std::sync::Arc;

use super::errors::{pg_error, pool_error};
use super::options::{Options, quoted};
use crate::bench_report::{BenchReport, FloorLoad, drive_floor};
use crate::error::BusResult;

/// Runs the floor's load on the database at `url` in a schema of its own, deleted afterwards.
pub async fn floor(url: &str, opts: &FloorLoad) -> BusResult<BenchReport> {
    let options = Options::from_env(url)?;
    let schema = format!("chorus_floor_{}", std::process::id());
    let pool = options.pool(&schema)?;
    let setup = pool.get().await.map_err(pool_error)?;
    setup
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {s} CASCADE; CREATE SCHEMA {s};
             CREATE TABLE {s}.floor (id BIGSERIAL PRIMARY KEY, sent_us BIGINT NOT NULL,
                                     body BYTEA NOT NULL);",
            s = quoted(&schema)
        ))
        .await
        .map_err(pg_error)?;
    let report = load(&pool, opts).await;
    let dropped = setup
        .batch_execute(&format!("DROP SCHEMA {} CASCADE", quoted(&schema)))
        .await
        .map_err(pg_error);
    let report = report?;
    dropped?;
    Ok(report)
}

async fn load(pool: &deadpool_postgres::Pool, opts: &FloorLoad) -> BusResult<BenchReport> {
    let body = Arc::new(vec![b'x'; opts.size]);
    let insert = |sent: i64| {
        let (pool, body) = (pool.clone(), body.clone());
        async move {
            let c = pool.get().await.map_err(pool_error)?;
            c.execute(
                "INSERT INTO floor (sent_us, body) VALUES ($1, $2)",
                &[&sent, &*body],
            )
            .await
            .map_err(pg_error)?;
            Ok(())
        }
    };
    let taker = pool.clone();
    let take = move || {
        let pool = taker.clone();
        async move {
            let c = pool.get().await.map_err(pool_error)?;
            let rows = c
                .query(
                    "DELETE FROM floor WHERE id IN (SELECT id FROM floor ORDER BY id \
                     LIMIT 64 FOR UPDATE SKIP LOCKED) RETURNING sent_us",
                    &[],
                )
                .await
                .map_err(pg_error)?;
            Ok(rows.iter().map(|r| r.get::<_, i64>(0)).collect())
        }
    };
    drive_floor(opts, insert, take).await
}
