//! The PostgreSQL store's queue statements: storing a message with its deliveries and its
//! dedupe record in one statement, claiming with `FOR UPDATE SKIP LOCKED`, settling and
//! postponing a claim, dead letters, and the effect records of `commit_once`.

use std::sync::Arc;

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::errors::{json_error, pg_error};
use crate::content::ContentDigest;
use crate::delivery::{DeadReason, Delivery, EffectRecord};
use crate::envelope::{Envelope, Priority, Rank};
use crate::error::{BusError, BusResult, seen_again};
use crate::fair::FairScheduler;

/// The envelope's columns of `messages m`, in the order [`envelope_at`] reads them.
pub(super) const ENV_COLS: &str = "m.id, m.recipients, m.handoff_type, m.priority, m.expires_ms, \
     m.task_id, m.correlation_id, m.conversation_id, m.sender, m.bytes";

/// The envelope read from `row` at column `i` on.
pub(super) fn envelope_at(row: &Row, i: usize) -> BusResult<Envelope> {
    let read = || -> Result<Envelope, tokio_postgres::Error> {
        let recipients: String = row.try_get(i + 1)?;
        let rank: i16 = row.try_get(i + 3)?;
        Ok(Envelope {
            id: row.try_get(i)?,
            recipients: serde_json::from_str(&recipients).unwrap_or_default(),
            handoff_type: row.try_get(i + 2)?,
            priority: u8::try_from(rank)
                .ok()
                .and_then(Priority::from_rank)
                .unwrap_or(Priority::Medium),
            expires_at_ms: row.try_get(i + 4)?,
            task_id: row.try_get(i + 5)?,
            correlation_id: row.try_get(i + 6)?,
            conversation_id: row.try_get(i + 7)?,
            sender: row.try_get(i + 8)?,
            bytes: row.try_get::<_, Vec<u8>>(i + 9)?.into(),
        })
    };
    read().map_err(pg_error)
}

/// One statement: the dedupe record (taken only when the id is new, outside the window, or
/// `dedupe` is off), the conversation's next entry number, the message and one delivery per
/// queue. Returns the message's row number, or no row when the record refused it. (No `NOTIFY`
/// here: a transaction that notifies holds the server's one notification lock through its
/// commit's WAL flush, so that notifying publishes commit one at a time. The other processes
/// are told after the commit, see `listen::Announcer`.)
const STORE_SQL: &str = "
WITH s AS (
    INSERT INTO seen (id, seq, at_ms) VALUES ($1::text, nextval('messages_seq_seq'), $2::int8)
    ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, at_ms = EXCLUDED.at_ms
        WHERE NOT $12::bool OR seen.at_ms < $13::int8
    RETURNING seq
), c AS (
    INSERT INTO conversations (id, last_seq) SELECT $9::text, 1 FROM s WHERE $9::text IS NOT NULL
    ON CONFLICT (id) DO UPDATE SET last_seq = conversations.last_seq + 1
    RETURNING last_seq
), m AS (
    INSERT INTO messages (seq, id, published_ms, recipients, handoff_type, priority, expires_ms,
                          task_id, correlation_id, conversation_id, conv_seq, sender, bytes)
    SELECT s.seq, $1::text, $2::int8, $3::text, $4::text, $5::int2, $6::int8, $7::text, $8::text,
           $9::text, (SELECT last_seq FROM c), $10::text, $11::bytea FROM s
    RETURNING seq
), d AS (
    INSERT INTO deliveries (queue, priority, seq, attempts, visible_ms)
    SELECT q, $5::int2, m.seq, 0, 0 FROM m, unnest($14::text[]) AS q
)
SELECT seq FROM m";

/// How a store treats ids.
pub(super) struct Store {
    /// Whether an id stored within the window is refused (a duplicate or a conflict).
    pub dedupe: bool,
    /// The dedupe window in milliseconds.
    pub window_ms: i64,
}

impl Store {
    /// Stores `env` in `queues` at `now`: true when stored, false for a duplicate, a conflict
    /// for an id stored within the window with other content.
    pub(super) async fn put(
        &self,
        c: &impl GenericClient,
        env: &Envelope,
        queues: &[String],
        now: i64,
    ) -> BusResult<bool> {
        let recipients = serde_json::to_string(&env.recipients).map_err(json_error)?;
        let statement = c.prepare_cached(STORE_SQL).await.map_err(pg_error)?;
        let rank = i16::from(env.priority.rank());
        let row = c
            .query_opt(
                &statement,
                &[
                    &env.id,
                    &now,
                    &recipients,
                    &env.handoff_type,
                    &rank,
                    &env.expires_at_ms,
                    &env.task_id,
                    &env.correlation_id,
                    &env.conversation_id,
                    &env.sender,
                    &&env.bytes[..],
                    &self.dedupe,
                    &(now - self.window_ms),
                    &queues,
                ],
            )
            .await
            .map_err(pg_error)?;
        if row.is_some() {
            return Ok(true);
        }
        let stored = c
            .query_opt(
                "SELECT m.bytes FROM seen s JOIN messages m ON m.seq = s.seq WHERE s.id = $1",
                &[&env.id],
            )
            .await
            .map_err(pg_error)?;
        match stored.map(|r| r.get::<_, Vec<u8>>(0)) {
            // A retry sending the same bytes is not parsed.
            Some(bytes) if bytes == env.bytes[..] => Ok(false),
            Some(bytes) => seen_again(
                &env.id,
                ContentDigest::of(&bytes),
                ContentDigest::of(&env.bytes),
            ),
            None => Err(BusError::Backend {
                backend: "postgres",
                detail: format!(
                    "the dedupe record of {:?} names no stored message (pruned meanwhile); \
                     nothing was stored (hint: send it again)",
                    env.id
                ),
            }),
        }
    }
}

/// The visible deliveries of queue $1 at time $2, at most $3 of each priority, locked for this
/// transaction and skipping those another consumer is claiming.
const CANDIDATES_SQL: &str = "
SELECT d.token, d.attempts, ENV_COLS FROM (VALUES (3), (2), (1), (0)) AS p (rank)
CROSS JOIN LATERAL (
    SELECT token, attempts, seq FROM deliveries
    WHERE queue = $1 AND priority = p.rank AND visible_ms <= $2
    ORDER BY token LIMIT $3 FOR UPDATE SKIP LOCKED
) AS d
JOIN messages m ON m.seq = d.seq";

static CANDIDATES: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| CANDIDATES_SQL.replace("ENV_COLS", ENV_COLS));

/// Claims up to `max` visible deliveries of `queue` in fair priority order until `deadline`,
/// in one transaction of `c`.
pub(super) async fn fetch(
    c: &impl GenericClient,
    queue: &str,
    max: usize,
    scheduler: &std::sync::Mutex<FairScheduler>,
    now: i64,
    deadline: i64,
) -> BusResult<Vec<Delivery>> {
    let select = c.prepare_cached(&CANDIDATES).await.map_err(pg_error)?;
    let limit = i64::try_from(max).unwrap_or(i64::MAX);
    let rows = c
        .query(&select, &[&queue, &now, &limit])
        .await
        .map_err(pg_error)?;
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let mut levels: [std::collections::VecDeque<(i64, i32, Envelope)>; 4] = Default::default();
    for row in &rows {
        let env = envelope_at(row, 2)?;
        levels[env.priority.rank() as usize].push_back((row.get(0), row.get(1), env));
    }
    for level in &mut levels {
        level.make_contiguous().sort_unstable_by_key(|r| r.0);
    }
    let plan = scheduler
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .plan(levels.each_ref().map(|l| l.len()), max);
    let name: Arc<str> = Arc::from(queue);
    let mut tokens = Vec::with_capacity(plan.len());
    let mut out = Vec::with_capacity(plan.len());
    for p in plan {
        let Some((token, attempts, env)) = levels[p.rank() as usize].pop_front() else {
            continue;
        };
        let attempt = attempts + 1;
        tokens.push(token);
        out.push(Delivery {
            envelope: Arc::new(env),
            queue: name.clone(),
            attempt: u32::try_from(attempt).unwrap_or(u32::MAX),
            token: format!("{token}:{attempt}"),
        });
    }
    let claim = c
        .prepare_cached(
            "UPDATE deliveries SET attempts = attempts + 1, visible_ms = $2 \
             WHERE token = ANY($1)",
        )
        .await
        .map_err(pg_error)?;
    c.execute(&claim, &[&tokens, &deadline])
        .await
        .map_err(pg_error)?;
    Ok(out)
}

/// The row and attempt a delivery's token names.
pub(super) fn token_parts(d: &Delivery) -> BusResult<(i64, i32)> {
    d.token
        .split_once(':')
        .and_then(|(t, a)| Some((t.parse().ok()?, a.parse().ok()?)))
        .ok_or_else(|| stale(d))
}

pub(super) fn stale(d: &Delivery) -> BusError {
    BusError::StaleDelivery {
        token: d.token.clone(),
        message_id: d.envelope.id.clone(),
    }
}

/// Deletes the delivery (an ack) when this attempt still holds it.
pub(super) async fn settle(c: &impl GenericClient, d: &Delivery) -> BusResult<()> {
    let (token, attempt) = token_parts(d)?;
    let statement = c
        .prepare_cached("DELETE FROM deliveries WHERE token = $1 AND attempts = $2")
        .await
        .map_err(pg_error)?;
    match c
        .execute(&statement, &[&token, &attempt])
        .await
        .map_err(pg_error)?
    {
        0 => Err(stale(d)),
        _ => Ok(()),
    }
}

/// Deletes every delivery still held by its attempt, in one statement (one commit); one result
/// each, in their order.
pub(super) async fn settle_all(
    c: &impl GenericClient,
    deliveries: &[Delivery],
) -> BusResult<Vec<BusResult<()>>> {
    let parts: Vec<Option<(i64, i32)>> = deliveries.iter().map(|d| token_parts(d).ok()).collect();
    let (tokens, attempts): (Vec<i64>, Vec<i32>) = parts.iter().flatten().copied().unzip();
    let statement = c
        .prepare_cached(
            "DELETE FROM deliveries d USING unnest($1::int8[], $2::int4[]) AS s (token, attempts) \
             WHERE d.token = s.token AND d.attempts = s.attempts RETURNING d.token",
        )
        .await
        .map_err(pg_error)?;
    let settled: std::collections::HashSet<i64> = c
        .query(&statement, &[&tokens, &attempts])
        .await
        .map_err(pg_error)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(deliveries
        .iter()
        .zip(parts)
        .map(|(d, part)| match part {
            Some((token, _)) if settled.contains(&token) => Ok(()),
            _ => Err(stale(d)),
        })
        .collect())
}

/// Makes the delivery visible again at `visible_ms` when this attempt still holds it.
pub(super) async fn postpone(
    c: &impl GenericClient,
    d: &Delivery,
    visible_ms: i64,
) -> BusResult<()> {
    let (token, attempt) = token_parts(d)?;
    let statement = c
        .prepare_cached("UPDATE deliveries SET visible_ms = $1 WHERE token = $2 AND attempts = $3")
        .await
        .map_err(pg_error)?;
    match c
        .execute(&statement, &[&visible_ms, &token, &attempt])
        .await
        .map_err(pg_error)?
    {
        0 => Err(stale(d)),
        _ => Ok(()),
    }
}

/// Takes the delivery from its queue and records it as a dead letter, in one statement; stale
/// when this attempt no longer holds it.
pub(super) async fn dead_letter(
    c: &impl GenericClient,
    d: &Delivery,
    reason: &DeadReason,
    now: i64,
) -> BusResult<()> {
    let (token, attempt) = token_parts(d)?;
    let (reason, envelope) = crate::delivery::dead_letter_columns(reason, Some(&d.envelope))?;
    let statement = c
        .prepare_cached(
            "WITH gone AS (DELETE FROM deliveries WHERE token = $1 AND attempts = $2 RETURNING 1) \
             INSERT INTO dead_letters (message_id, queue, reason, bytes, envelope, at_ms) \
             SELECT $3, $4, $5, $6, $7, $8 FROM gone RETURNING id",
        )
        .await
        .map_err(pg_error)?;
    let queue: &str = &d.queue;
    let rows = c
        .query(
            &statement,
            &[
                &token,
                &attempt,
                &d.envelope.id,
                &queue,
                &reason,
                &&d.envelope.bytes[..],
                &envelope,
                &now,
            ],
        )
        .await
        .map_err(pg_error)?;
    if rows.is_empty() {
        Err(stale(d))
    } else {
        Ok(())
    }
}

/// Records bytes refused on publish; returns the letter's id.
pub(super) async fn record_rejected(
    c: &impl GenericClient,
    bytes: &[u8],
    message_id: Option<&str>,
    reason: &DeadReason,
    now: i64,
) -> BusResult<String> {
    let (reason, _) = crate::delivery::dead_letter_columns(reason, None)?;
    let row = c
        .query_one(
            "INSERT INTO dead_letters (message_id, queue, reason, bytes, envelope, at_ms) \
             VALUES ($1, NULL, $2, $3, NULL, $4) RETURNING id",
            &[&message_id, &reason, &bytes, &now],
        )
        .await
        .map_err(pg_error)?;
    Ok(row.get::<_, i64>(0).to_string())
}

/// Records `message_id` as handled by `handler` with its effect; false when it already was.
pub(super) async fn record_handled(
    c: &impl GenericClient,
    handler: &str,
    message_id: &str,
    record: &[u8],
) -> BusResult<bool> {
    let statement = c
        .prepare_cached(
            "WITH h AS (INSERT INTO handled (handler, message_id) VALUES ($1, $2) \
             ON CONFLICT DO NOTHING RETURNING 1) \
             INSERT INTO effects (handler, message_id, record, at_ms) SELECT $1, $2, $3, $4 FROM h",
        )
        .await
        .map_err(pg_error)?;
    let n = c
        .execute(
            &statement,
            &[&handler, &message_id, &record, &crate::config::now_ms()],
        )
        .await
        .map_err(pg_error)?;
    Ok(n == 1)
}

/// True when `handler` has handled `message_id`.
pub(super) async fn is_handled(
    c: &impl GenericClient,
    handler: &str,
    message_id: &str,
) -> BusResult<bool> {
    let statement = c
        .prepare_cached("SELECT 1 FROM handled WHERE handler = $1 AND message_id = $2")
        .await
        .map_err(pg_error)?;
    Ok(c.query_opt(&statement, &[&handler, &message_id])
        .await
        .map_err(pg_error)?
        .is_some())
}

/// How many effects `handler` has.
pub(super) async fn effect_count(c: &impl GenericClient, handler: &str) -> BusResult<u64> {
    let statement = c
        .prepare_cached("SELECT COUNT(*) FROM effects WHERE handler = $1")
        .await
        .map_err(pg_error)?;
    let n: i64 = c
        .query_one(&statement, &[&handler])
        .await
        .map_err(pg_error)?
        .get(0);
    Ok(n.unsigned_abs())
}

/// The effects of `handler` in commit order.
pub(super) async fn effects(c: &impl GenericClient, handler: &str) -> BusResult<Vec<EffectRecord>> {
    let statement = c
        .prepare_cached("SELECT message_id, record FROM effects WHERE handler = $1 ORDER BY id")
        .await
        .map_err(pg_error)?;
    Ok(c.query(&statement, &[&handler])
        .await
        .map_err(pg_error)?
        .iter()
        .map(|r| EffectRecord {
            handler: handler.to_owned(),
            message_id: r.get(0),
            record: r.get(1),
        })
        .collect())
}
