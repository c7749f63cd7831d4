//! Admin listings: the tasks and conversations the store knows, most recently active first.

use axum::Json;
use axum::extract::State;
use chorus_bus::TrackSummary;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::extract::ApiQuery;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// Most entries a listing returns.
const MAX: usize = 1000;

/// A task or a conversation: how many messages it has and when they were published.
#[derive(Debug, Serialize, ToSchema)]
pub struct Track {
    /// The task id or conversation id.
    pub id: String,
    /// Messages logged under it (a replayed message counts again).
    pub messages: u64,
    /// When its first message was published, Unix milliseconds.
    pub first_ms: i64,
    /// When its latest message was published, Unix milliseconds.
    pub last_ms: i64,
}

impl From<TrackSummary> for Track {
    fn from(t: TrackSummary) -> Track {
        Track {
            id: t.id,
            messages: t.messages,
            first_ms: t.first_ms,
            last_ms: t.last_ms,
        }
    }
}

/// How many entries to list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    /// At most this many (default 100, at most 1000).
    pub limit: Option<usize>,
}

impl Limit {
    fn get(&self) -> usize {
        self.limit.unwrap_or(100).clamp(1, MAX)
    }
}

/// The known tasks, most recently active first (admin token).
#[utoipa::path(
    get,
    path = "/v1/tasks",
    tag = "admin",
    params(Limit),
    responses(
        (status = 200, description = "The tasks", body = Vec<Track>),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn tasks(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(limit): ApiQuery<Limit>,
) -> Result<Json<Vec<Track>>, ApiError> {
    caller.require_admin("listings")?;
    let tasks = app.bus.tasks(limit.get()).await?;
    Ok(Json(tasks.into_iter().map(Track::from).collect()))
}

/// The known conversations, most recently active first (admin token).
#[utoipa::path(
    get,
    path = "/v1/conversations",
    tag = "admin",
    params(Limit),
    responses(
        (status = 200, description = "The conversations", body = Vec<Track>),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn conversations(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(limit): ApiQuery<Limit>,
) -> Result<Json<Vec<Track>>, ApiError> {
    caller.require_admin("listings")?;
    let conversations = app.bus.conversations(limit.get()).await?;
    Ok(Json(conversations.into_iter().map(Track::from).collect()))
}
