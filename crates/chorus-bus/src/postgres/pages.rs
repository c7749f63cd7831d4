//! Reads of the PostgreSQL store: bindings, dead letters, a task's messages, tracked keys,
//! a queue's deliveries (peek, depth, the next visible time) and the oldest waiting message.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::errors::{json_error, pg_error};
use super::queue::{ENV_COLS, envelope_at};
use crate::delivery::{DeadLetter, LogEntry, Logged, TrackSummary};
use crate::envelope::Envelope;
use crate::error::{BusError, BusResult};
use crate::peek::{PEEK_LIMIT, Queued, QueuedState};
use crate::retention::{Page, TrackCursor, number_cursor};
use crate::routing::{Binding, Filter};

/// A count or a limit as PostgreSQL's integer (saturating).
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The number the first column of the one row of `sql` holds.
async fn count(
    c: &impl GenericClient,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> BusResult<u64> {
    let statement = c.prepare_cached(sql).await.map_err(pg_error)?;
    let row = c.query_one(&statement, params).await.map_err(pg_error)?;
    Ok(row.get::<_, i64>(0).unsigned_abs())
}

/// Rows of `sql`, through the connection's statement cache.
async fn rows(
    c: &impl GenericClient,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> BusResult<Vec<Row>> {
    let statement = c.prepare_cached(sql).await.map_err(pg_error)?;
    c.query(&statement, params).await.map_err(pg_error)
}

/// Adds a binding (idempotent).
pub(super) async fn bind(c: &impl GenericClient, b: &Binding) -> BusResult<()> {
    let (kind, value) = b.filter.parts();
    let statement = c
        .prepare_cached(
            "INSERT INTO bindings (queue, kind, value) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .await
        .map_err(pg_error)?;
    c.execute(&statement, &[&b.queue, &kind, &value])
        .await
        .map_err(pg_error)?;
    Ok(())
}

/// Every binding, in the order they were added.
pub(super) async fn bindings(c: &impl GenericClient) -> BusResult<Vec<Binding>> {
    rows(
        c,
        "SELECT queue, kind, value FROM bindings ORDER BY added",
        &[],
    )
    .await?
    .iter()
    .map(|r| {
        let kind: String = r.get(1);
        let value: String = r.get(2);
        let filter = Filter::from_parts(&kind, &value)
            .ok_or_else(|| BusError::Corrupt(format!("unknown binding kind {kind:?}")))?;
        Ok(Binding {
            queue: r.get(0),
            filter,
        })
    })
    .collect()
}

const DEAD_COLS: &str = "id, message_id, queue, reason, bytes, envelope, at_ms";

fn dead_letter(r: &Row) -> BusResult<DeadLetter> {
    let bytes: Vec<u8> = r.get(4);
    let envelope = crate::delivery::dead_letter_envelope(r.get(5), &bytes)?;
    Ok(DeadLetter {
        id: r.get::<_, i64>(0).to_string(),
        message_id: r.get(1),
        queue: r.get(2),
        reason: serde_json::from_str(r.get::<_, &str>(3)).map_err(json_error)?,
        bytes,
        envelope,
        at_ms: Some(r.get(6)),
    })
}

/// Up to `limit` dead letters after id `after`, oldest first.
pub(super) async fn dead_letters(
    c: &impl GenericClient,
    after: Option<&str>,
    limit: usize,
) -> BusResult<Page<DeadLetter>> {
    let after = int(number_cursor(after)?);
    let found = rows(
        c,
        &format!("SELECT {DEAD_COLS} FROM dead_letters WHERE id > $1 ORDER BY id LIMIT $2"),
        &[&after, &int(limit).saturating_add(1)],
    )
    .await?;
    let items = found
        .iter()
        .map(dead_letter)
        .collect::<BusResult<Vec<_>>>()?;
    let total = dead_count(c).await?;
    Ok(Page::cut(items, limit, Some(total), |d| d.id.clone()))
}

/// The number of dead letters.
pub(super) async fn dead_count(c: &impl GenericClient) -> BusResult<u64> {
    count(c, "SELECT COUNT(*) FROM dead_letters", &[]).await
}

/// The dead letter `id`; none for an id that is not one.
pub(super) async fn find_dead(c: &impl GenericClient, id: &str) -> BusResult<Option<DeadLetter>> {
    let Ok(id) = id.parse::<i64>() else {
        return Ok(None);
    };
    let found = rows(
        c,
        &format!("SELECT {DEAD_COLS} FROM dead_letters WHERE id = $1"),
        &[&id],
    )
    .await?;
    found.first().map(dead_letter).transpose()
}

/// The dead letters deliveries of `message_id` became, oldest first (index `dead_letters_message`).
pub(super) async fn dead_of(
    c: &impl GenericClient,
    message_id: &str,
) -> BusResult<Vec<DeadLetter>> {
    rows(
        c,
        &format!(
            "SELECT {DEAD_COLS} FROM dead_letters WHERE message_id = $1 AND queue IS NOT NULL \
             ORDER BY id"
        ),
        &[&message_id],
    )
    .await?
    .iter()
    .map(dead_letter)
    .collect()
}

/// Deletes a dead letter; an error when there is none with this id.
pub(super) async fn remove_dead(c: &impl GenericClient, id: &str) -> BusResult<()> {
    let unknown = || BusError::UnknownDeadLetter(id.to_owned());
    let n: i64 = id.parse().map_err(|_| unknown())?;
    match c
        .execute("DELETE FROM dead_letters WHERE id = $1", &[&n])
        .await
        .map_err(pg_error)?
    {
        0 => Err(unknown()),
        _ => Ok(()),
    }
}

/// Up to `limit` messages of `task_id` after row `after`, in publish order.
pub(super) async fn task_messages(
    c: &impl GenericClient,
    task_id: &str,
    after: Option<&str>,
    limit: usize,
) -> BusResult<Page<Logged>> {
    let after = int(number_cursor(after)?);
    let found = rows(
        c,
        &format!(
            "SELECT m.seq, m.published_ms, {ENV_COLS} FROM messages m \
             WHERE m.task_id = $1 AND m.seq > $2 ORDER BY m.seq LIMIT $3"
        ),
        &[&task_id, &after, &int(limit).saturating_add(1)],
    )
    .await?;
    let items = found
        .iter()
        .map(|r| Ok((r.get::<_, i64>(0), logged_at(r, 1)?)))
        .collect::<BusResult<Vec<_>>>()?;
    let total = count(
        c,
        "SELECT COUNT(*) FROM messages WHERE task_id = $1",
        &[&task_id],
    )
    .await?;
    Ok(Page::cut_numbered(items, limit, total))
}

fn logged_at(r: &Row, i: usize) -> BusResult<Logged> {
    Ok(Logged {
        published_ms: r.get(i),
        envelope: envelope_at(r, i + 1)?,
    })
}

/// The latest stored message with this id, with its publish time.
pub(super) async fn locate(c: &impl GenericClient, id: &str) -> BusResult<Option<Logged>> {
    let found = rows(
        c,
        &format!(
            "SELECT m.published_ms, {ENV_COLS} FROM messages m WHERE m.id = $1 \
             ORDER BY m.published_ms DESC, m.seq DESC LIMIT 1"
        ),
        &[&id],
    )
    .await?;
    found.first().map(|r| logged_at(r, 0)).transpose()
}

/// Every stored message of a correlation id, in publish order.
pub(super) async fn by_correlation(
    c: &impl GenericClient,
    correlation_id: &str,
) -> BusResult<Vec<Envelope>> {
    rows(
        c,
        &format!("SELECT {ENV_COLS} FROM messages m WHERE m.correlation_id = $1 ORDER BY m.seq"),
        &[&correlation_id],
    )
    .await?
    .iter()
    .map(|r| envelope_at(r, 0))
    .collect()
}

/// The conversation's entries after `after`, in their order.
pub(super) async fn conversation(
    c: &impl GenericClient,
    conversation_id: &str,
    after: u64,
    limit: usize,
) -> BusResult<Vec<LogEntry>> {
    rows(
        c,
        &format!(
            "SELECT m.conv_seq, {ENV_COLS} FROM messages m WHERE m.conversation_id = $1 \
             AND m.conv_seq > $2 ORDER BY m.conv_seq LIMIT $3"
        ),
        &[&conversation_id, &int(after), &int(limit)],
    )
    .await?
    .iter()
    .map(|r| {
        Ok(LogEntry {
            seq: r.get::<_, i64>(0).unsigned_abs(),
            envelope: envelope_at(r, 1)?,
        })
    })
    .collect()
}

/// Which tracking column a listing reads.
#[derive(Clone, Copy)]
pub(super) enum Key {
    Task,
    Conversation,
}

impl Key {
    fn column(self) -> &'static str {
        match self {
            Key::Task => "task_id",
            Key::Conversation => "conversation_id",
        }
    }
}

/// Up to `limit` values of `key`, latest activity first (then the value, descending), after
/// cursor `after`, with their message counts and times.
pub(super) async fn tracks(
    c: &impl GenericClient,
    key: Key,
    after: Option<&str>,
    limit: usize,
) -> BusResult<Page<TrackSummary>> {
    let cursor = TrackCursor::parse(after)?;
    let column = key.column();
    let (last_ms, id) = match &cursor {
        Some(c) => (Some(c.last_ms), c.id.as_str()),
        None => (None, ""),
    };
    let found = rows(
        c,
        &format!(
            "SELECT {column}, COUNT(*), MIN(published_ms), MAX(published_ms) FROM messages \
             WHERE {column} IS NOT NULL GROUP BY {column} \
             HAVING $1::int8 IS NULL OR MAX(published_ms) < $1 \
                 OR (MAX(published_ms) = $1 AND {column} < $2) \
             ORDER BY MAX(published_ms) DESC, {column} DESC LIMIT $3"
        ),
        &[&last_ms, &id, &int(limit).saturating_add(1)],
    )
    .await?;
    let items = found
        .iter()
        .map(|r| TrackSummary {
            id: r.get(0),
            messages: r.get::<_, i64>(1).unsigned_abs(),
            first_ms: r.get(2),
            last_ms: r.get(3),
        })
        .collect();
    let total = count(
        c,
        &format!("SELECT COUNT(DISTINCT {column}) FROM messages WHERE {column} IS NOT NULL"),
        &[],
    )
    .await?;
    Ok(Page::cut(items, limit, Some(total), TrackCursor::of))
}

/// Deliveries of `queue` not yet acknowledged.
pub(super) async fn depth(c: &impl GenericClient, queue: &str) -> BusResult<u64> {
    count(
        c,
        "SELECT COUNT(*) FROM deliveries WHERE queue = $1",
        &[&queue],
    )
    .await
}

/// When the next delivery of `queue` becomes visible (Unix ms); none when it has none.
pub(super) async fn next_visible(c: &impl GenericClient, queue: &str) -> BusResult<Option<i64>> {
    let found = rows(
        c,
        "SELECT MIN(visible_ms) FROM deliveries WHERE queue = $1",
        &[&queue],
    )
    .await?;
    Ok(found.first().and_then(|r| r.get(0)))
}

/// When the oldest message a queue still holds was published: the message of the lowest row
/// number with a delivery (row numbers follow publish order).
pub(super) async fn oldest_waiting(c: &impl GenericClient) -> BusResult<Option<i64>> {
    let found = rows(
        c,
        "SELECT m.published_ms FROM messages m \
         WHERE m.seq = (SELECT MIN(seq) FROM deliveries)",
        &[],
    )
    .await?;
    Ok(found.first().map(|r| r.get(0)))
}

/// Up to `limit` deliveries of `queue`, highest priority first, then in publish order, as
/// seen at `now`; nothing is locked or changed.
pub(super) async fn peek(
    c: &impl GenericClient,
    queue: &str,
    limit: usize,
    now: i64,
) -> BusResult<Vec<Queued>> {
    let found = rows(
        c,
        &format!(
            "SELECT d.attempts, d.visible_ms, {ENV_COLS} FROM deliveries d \
             JOIN messages m ON m.seq = d.seq WHERE d.queue = $1 \
             ORDER BY d.priority DESC, d.token LIMIT $2"
        ),
        &[&queue, &int(limit.min(PEEK_LIMIT))],
    )
    .await?;
    found
        .iter()
        .map(|r| {
            Ok(Queued {
                attempts: Some(u32::try_from(r.get::<_, i32>(0)).unwrap_or(0)),
                state: QueuedState::hidden_until(r.get(1), now),
                envelope: envelope_at(r, 2)?,
            })
        })
        .collect()
}
