//! The floor chorus on PostgreSQL is measured against, in the same run: the same number of
//! rows of the same size, each a plain `INSERT` in its own commit (the server's durability
//! settings, as chorus's), from one producer with as many in flight and as many connections
//! as chorus's pool; consumers taking 64 at a time with one `DELETE … FOR UPDATE SKIP LOCKED
//! … RETURNING`, and looking again after 1 ms when they found none. No chorus code runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::errors::{pg_error, pool_error};
use super::options::{Options, quoted};
use crate::bench_report::{BenchReport, FloorLoad};
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
    let total = opts.messages.max(1) as u64;
    let body = vec![b'x'; opts.size];
    let start = Instant::now();
    let received = Arc::new(AtomicU64::new(0));
    let mut consumers = Vec::new();
    for _ in 0..opts.consumers.max(1) {
        let (pool, received) = (pool.clone(), received.clone());
        consumers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut end = Duration::ZERO;
            while received.load(Ordering::SeqCst) < total {
                let c = pool.get().await.map_err(pool_error)?;
                let taken = c
                    .query(
                        "DELETE FROM floor WHERE id IN (SELECT id FROM floor ORDER BY id \
                         LIMIT 64 FOR UPDATE SKIP LOCKED) RETURNING sent_us",
                        &[],
                    )
                    .await
                    .map_err(pg_error)?;
                drop(c);
                if taken.is_empty() {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                let now = start.elapsed().as_micros();
                for row in &taken {
                    let sent = u128::from(row.get::<_, i64>(0).unsigned_abs());
                    latencies.push(now.saturating_sub(sent));
                }
                received.fetch_add(taken.len() as u64, Ordering::SeqCst);
                end = start.elapsed();
            }
            Ok::<_, crate::error::BusError>((latencies, end))
        }));
    }
    let mut inflight = FuturesUnordered::new();
    for _ in 0..total {
        if inflight.len() >= opts.in_flight.max(1)
            && let Some(result) = inflight.next().await
        {
            result?;
        }
        let (pool, body) = (pool.clone(), &body);
        inflight.push(async move {
            let sent = i64::try_from(start.elapsed().as_micros()).unwrap_or(i64::MAX);
            let c = pool.get().await.map_err(pool_error)?;
            c.execute(
                "INSERT INTO floor (sent_us, body) VALUES ($1, $2)",
                &[&sent, body],
            )
            .await
            .map_err(pg_error)?;
            Ok::<(), crate::error::BusError>(())
        });
    }
    while let Some(result) = inflight.next().await {
        result?;
    }
    let mut latencies = Vec::new();
    let mut end = Duration::ZERO;
    for c in consumers {
        let (l, e) = c.await.map_err(|e| {
            crate::error::BusError::Storage(format!("a consumer task failed: {e}"))
        })??;
        latencies.extend(l);
        end = end.max(e);
    }
    let got = latencies.len() as u64;
    Ok(BenchReport::from_latencies(total, got, 0, latencies, end))
}
