//! An agent's journal for a task: records written once under a key (tool calls before and
//! after they run, conversation steps, outputs of handled deliveries), kept in the hub's store
//! so every replica of the agent, on any machine, resumes from them.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use chorus_agent::journal::{Book, BusJournal, Journal};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use crate::api::extract::ApiPath;
use crate::api::publish::{body_error, parse_json};
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids::check_id;
use crate::state::AppState;

/// The journal a request names: the agent and the task.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct JournalPath {
    /// The agent (shared by its replicas).
    pub agent: String,
    /// The task.
    pub task_id: String,
}

/// One record of a journal entry's path: the journal and the record's key.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct RecordPath {
    /// The agent (shared by its replicas).
    pub agent: String,
    /// The task.
    pub task_id: String,
    /// The record's key, unique in the journal.
    pub key: String,
}

/// One record.
#[derive(Debug, Serialize, ToSchema)]
pub struct JournalRecord {
    /// Its key.
    pub key: String,
    /// What was recorded (any JSON).
    #[schema(value_type = Object)]
    pub record: Value,
}

/// A journal's records in the order they were written.
#[derive(Debug, Serialize, ToSchema)]
pub struct JournalBody {
    /// The records.
    pub records: Vec<JournalRecord>,
}

fn journal(app: &AppState) -> BusJournal {
    BusJournal::new(app.bus.clone())
}

fn failed(e: impl ToString) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "store_failed",
        e.to_string(),
    )
}

/// Reads the journal `agent` keeps for `task_id`.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent}/journal/{task_id}",
    tag = "journal",
    params(JournalPath),
    responses(
        (status = 200, description = "The records, oldest first", body = JournalBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's journal", body = ErrorBody),
        (status = 503, description = "The store failed", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn records(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(path): ApiPath<JournalPath>,
) -> Result<Json<JournalBody>, ApiError> {
    check_id("the agent id", &path.agent)?;
    check_id("the task id", &path.task_id)?;
    app.policy.may_read(&caller, &path.agent)?;
    let book = Book::new(&path.agent, &path.task_id);
    let records = journal(&app)
        .records(&book)
        .await
        .map_err(failed)?
        .into_iter()
        .map(|(key, record)| JournalRecord { key, record })
        .collect();
    Ok(Json(JournalBody { records }))
}

/// Writes a record once: 201 when it was recorded now, 200 when the key already held one (the
/// first record stands; read it back with the GET).
#[utoipa::path(
    put,
    path = "/v1/agents/{agent}/journal/{task_id}/{key}",
    tag = "journal",
    params(RecordPath),
    request_body(content = Object, content_type = "application/json", description = "The record (any JSON)"),
    responses(
        (status = 201, description = "Recorded"),
        (status = 200, description = "The key was already recorded; nothing changed"),
        (status = 400, description = "A body that is not JSON", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's journal", body = ErrorBody),
        (status = 413, description = "A record larger than an agent may write in a minute (`record_too_large`)", body = ErrorBody),
        (status = 422, description = "The journal holds `max_journal_records` records (`journal_full`)", body = ErrorBody),
        (status = 429, description = "More than `max_journal_bytes_per_minute` bytes of records this minute, or the rate limit; with `Retry-After`", body = ErrorBody),
        (status = 503, description = "The store failed", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn record(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(path): ApiPath<RecordPath>,
    body: Result<Bytes, BytesRejection>,
) -> Result<StatusCode, ApiError> {
    check_id("the agent id", &path.agent)?;
    check_id("the task id", &path.task_id)?;
    check_id("the record key", &path.key)?;
    may_write(&caller, &path.agent)?;
    // A record is a write to the store as a publish is: under the same rate limit.
    if let Caller::Agent(me) = &caller {
        app.rate.check(me)?;
    }
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let record: Value = parse_json(&bytes)?;
    let book = Book::new(&path.agent, &path.task_id);
    // Under the journal quotas: records per journal, bytes per agent a minute (an admin's
    // writes count against the journal's agent); a journal at its cap still answers a key it
    // holds.
    let held = app
        .bus
        .effect_count(&book.handler())
        .await
        .map_err(failed)?;
    if let Err(full) = app
        .journal_quota
        .check_records(&path.agent, &path.task_id, held)
    {
        already_recorded(&app, &book, &path.key, full).await?;
    }
    app.journal_quota.take_bytes(&path.agent, bytes.len())?;
    let fresh = journal(&app)
        .record(&book, &path.key, &record)
        .await
        .map_err(failed)?;
    Ok(if fresh {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    })
}

/// A journal at its cap still answers a write of a key it holds (200, nothing changed, as
/// below the cap): a retry of a record made before the cap was reached is not refused.
async fn already_recorded(
    app: &AppState,
    book: &Book,
    key: &str,
    full: ApiError,
) -> Result<(), ApiError> {
    match app.bus.already_handled(&book.handler(), key).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(full),
        Err(e) => Err(failed(e)),
    }
}

/// Refuses (403) a record written by an agent other than the journal's own: one that may read
/// the agent's inbox (a pool reader) could otherwise forge its recorded tool results and
/// outputs. The admin token may write any journal.
fn may_write(caller: &Caller, agent: &str) -> Result<(), ApiError> {
    match caller {
        Caller::Agent(me) if me != agent => Err(ApiError::forbidden(format!(
            "agent {me:?} may not write the journal of {agent:?}; an agent writes only its own"
        ))),
        _ => Ok(()),
    }
}
