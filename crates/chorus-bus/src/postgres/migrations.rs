//! The PostgreSQL store's schema, by numbered migrations applied once, in order, under an
//! advisory lock, so that replicas starting together neither race nor apply one twice. A
//! database migrated by a newer chorus is refused rather than misread.

use tokio_postgres::Client;

use super::errors::pg_error;
use super::options::quoted;
use crate::error::{BusError, BusResult};

/// The migrations, version 1 first; a release adds at the end and never edits one.
const MIGRATIONS: &[&str] = &[V1, V2];

/// The PostgreSQL schema version this build knows and migrates to.
pub const LATEST: i32 = MIGRATIONS.len() as i32;

/// Effect records get the time they were written, which the pruner reads (the records
/// written before count as written at 0, the oldest there are).
const V2: &str = "
ALTER TABLE effects ADD COLUMN at_ms BIGINT NOT NULL DEFAULT 0;
CREATE INDEX effects_at ON effects (at_ms, id);
";

const V1: &str = "
CREATE TABLE messages (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL,
    published_ms BIGINT NOT NULL,
    recipients TEXT NOT NULL,
    handoff_type TEXT,
    priority SMALLINT NOT NULL,
    expires_ms BIGINT,
    task_id TEXT,
    correlation_id TEXT,
    conversation_id TEXT,
    conv_seq BIGINT,
    sender TEXT,
    bytes BYTEA NOT NULL
);
CREATE INDEX messages_id ON messages (id, published_ms);
CREATE INDEX messages_task ON messages (task_id, seq) WHERE task_id IS NOT NULL;
CREATE INDEX messages_corr ON messages (correlation_id, seq) WHERE correlation_id IS NOT NULL;
CREATE INDEX messages_conv ON messages (conversation_id, conv_seq) WHERE conversation_id IS NOT NULL;
-- The dedupe record: one row per id, naming the message stored last under it. The unique key
-- makes the check and the insert one atomic step for concurrent publishers.
CREATE TABLE seen (
    id TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    at_ms BIGINT NOT NULL
);
CREATE INDEX seen_seq ON seen (seq);
-- A conversation's counter: its row lock orders the log entries of concurrent publishers.
CREATE TABLE conversations (
    id TEXT PRIMARY KEY,
    last_seq BIGINT NOT NULL
);
CREATE TABLE deliveries (
    token BIGSERIAL PRIMARY KEY,
    queue TEXT NOT NULL,
    priority SMALLINT NOT NULL,
    seq BIGINT NOT NULL,
    attempts INTEGER NOT NULL,
    visible_ms BIGINT NOT NULL
);
-- Claims find their rows through (queue, priority, token). No index holds `attempts` or
-- `visible_ms`, which every claim, nack and lease renewal changes: those updates stay
-- heap-only (HOT), writing no index entry.
CREATE INDEX deliveries_ready ON deliveries (queue, priority, token);
CREATE INDEX deliveries_seq ON deliveries (seq);
CREATE TABLE bindings (
    added BIGSERIAL,
    queue TEXT NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (queue, kind, value)
);
CREATE TABLE dead_letters (
    id BIGSERIAL PRIMARY KEY,
    message_id TEXT,
    queue TEXT,
    reason TEXT NOT NULL,
    bytes BYTEA NOT NULL,
    envelope TEXT,
    at_ms BIGINT NOT NULL
);
CREATE INDEX dead_letters_message ON dead_letters (message_id, id) WHERE message_id IS NOT NULL;
CREATE TABLE handled (
    handler TEXT NOT NULL,
    message_id TEXT NOT NULL,
    PRIMARY KEY (handler, message_id)
);
CREATE TABLE effects (
    id BIGSERIAL PRIMARY KEY,
    handler TEXT NOT NULL,
    message_id TEXT NOT NULL,
    record BYTEA NOT NULL
);
CREATE INDEX effects_handler ON effects (handler, id);
";

/// Brings schema `schema` to [`LATEST`] (creating it when missing) in one transaction; a
/// schema newer than this build is refused. Returns the version found before.
pub(crate) async fn migrate(client: &mut Client, schema: &str) -> BusResult<i32> {
    let tx = client.transaction().await.map_err(pg_error)?;
    // One lock per namespace, held to the commit: a second replica waits, then finds it done.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext('chorus migrations ' || $1::text))",
        &[&schema],
    )
    .await
    .map_err(pg_error)?;
    let s = quoted(schema);
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {s};
         CREATE TABLE IF NOT EXISTS {s}.chorus_schema (
             version INTEGER PRIMARY KEY,
             applied_ms BIGINT NOT NULL
         );"
    ))
    .await
    .map_err(pg_error)?;
    let found: i32 = tx
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0) FROM {s}.chorus_schema"),
            &[],
        )
        .await
        .map_err(pg_error)?
        .get(0);
    if found > LATEST {
        return Err(BusError::Config {
            what: "store".into(),
            detail: format!(
                "the PostgreSQL schema {schema:?} is at version {found}, made by a newer chorus; \
                 this one knows versions up to {LATEST} (hint: run the newer chorus, or another \
                 namespace with ?namespace=NAME)"
            ),
        });
    }
    for (version, sql) in (1..)
        .zip(MIGRATIONS)
        .skip(usize::try_from(found).unwrap_or(0))
    {
        tx.batch_execute(&format!("SET LOCAL search_path TO {s}; {sql}"))
            .await
            .map_err(pg_error)?;
        tx.execute(
            &format!("INSERT INTO {s}.chorus_schema (version, applied_ms) VALUES ($1, $2)"),
            &[&version, &crate::config::now_ms()],
        )
        .await
        .map_err(pg_error)?;
    }
    tx.commit().await.map_err(pg_error)?;
    Ok(found)
}
