//! Human confirmations: an agent records a tool call that needs a person, the admin approves or
//! rejects it, the agent uses an approval once for exactly that call.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use chorus_agent::confirm::{ConfirmError, Confirmation, ConfirmationState};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::{IntoParams, ToSchema};

use crate::api::extract::{Admin, ApiPath, ApiQuery};
use crate::api::pages::{ConfirmationPage, limit};
use crate::api::publish::body_error;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::ids::check_id;
use crate::state::AppState;

/// Body of a confirmation request.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestBody {
    /// Your agent id (the token's agent).
    pub agent: String,
    /// The tool's name.
    pub tool: String,
    /// The model's tool call id; requesting the same call again returns the first record.
    pub call_id: String,
    /// The argument string exactly as the model gave it.
    pub arguments: String,
    /// The task the call belongs to.
    #[serde(default)]
    pub task_id: Option<String>,
}

/// Body of an approval or a rejection.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionBody {
    /// Why, for the record.
    #[serde(default)]
    pub note: Option<String>,
}

/// Body of a consume.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConsumeBody {
    /// The argument string of the call about to run; must equal the approved one.
    pub arguments: String,
}

/// Which confirmations to list, and which page.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct StateFilter {
    /// pending, approved, rejected or consumed; all when absent.
    #[serde(default)]
    pub state: Option<String>,
    /// At most this many (default 100; 1 to 1000, a value outside is brought inside).
    pub limit: Option<usize>,
    /// The `next` of the page before, unchanged; the first page when absent.
    pub after: Option<String>,
}

/// Reads a JSON body into `T`; an empty body is `T::default()` when `empty` is given.
fn read<T: DeserializeOwned>(
    app: &AppState,
    body: Result<Bytes, BytesRejection>,
    empty: Option<T>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    if bytes.iter().all(u8::is_ascii_whitespace)
        && let Some(v) = empty
    {
        return Ok(v);
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(
            "malformed_json",
            format!(
                "the body is not the expected JSON: {e} (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })
}

/// The refusal for a store error.
fn refusal(e: ConfirmError) -> ApiError {
    let status = match &e {
        ConfirmError::NotFound(_) => StatusCode::NOT_FOUND,
        ConfirmError::WrongState { .. } => StatusCode::CONFLICT,
        ConfirmError::ArgumentsChanged(_) => StatusCode::UNPROCESSABLE_ENTITY,
        ConfirmError::Store(_) => StatusCode::SERVICE_UNAVAILABLE,
        ConfirmError::BadCursor(_) => StatusCode::BAD_REQUEST,
    };
    let code = match &e {
        ConfirmError::NotFound(_) => "not_found",
        ConfirmError::WrongState { .. } => "wrong_state",
        ConfirmError::ArgumentsChanged(_) => "arguments_changed",
        ConfirmError::Store(_) => "store_unavailable",
        ConfirmError::BadCursor(_) => "bad_cursor",
    };
    let message = match &e {
        ConfirmError::ArgumentsChanged(_) => format!(
            "{e}: the argument string must be byte for byte the one approved (hint: request a new confirmation for the new arguments)"
        ),
        _ => e.to_string(),
    };
    ApiError::new(status, code, message)
}

/// The confirmation `id`, or 404.
async fn found(app: &AppState, id: &str) -> Result<Confirmation, ApiError> {
    check_id("the confirmation id", id)?;
    app.confirmations
        .get(id)
        .await
        .map_err(refusal)?
        .ok_or_else(|| refusal(ConfirmError::NotFound(id.to_owned())))
}

/// Refuses anyone but the admin and the agent that owns `c`.
fn owner_or_admin(caller: &Caller, c: &Confirmation) -> Result<(), ApiError> {
    match caller {
        Caller::Admin => Ok(()),
        Caller::Agent(a) if *a == c.agent => Ok(()),
        Caller::Agent(a) => Err(ApiError::forbidden(format!(
            "confirmation {} belongs to agent {:?}, not {a:?}",
            c.id, c.agent
        ))),
    }
}

/// Records a pending confirmation for one tool call (the calling agent's token).
#[utoipa::path(
    post,
    path = "/v1/confirmations",
    tag = "confirmations",
    request_body = RequestBody,
    responses(
        (status = 201, description = "Recorded, pending", body = Confirmation),
        (status = 200, description = "This call was already recorded; its record", body = Confirmation),
        (status = 400, description = "Malformed JSON or an unsafe id", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "`agent` is not the token's agent", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn request(
    State(app): State<AppState>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<Confirmation>), ApiError> {
    let Caller::Agent(me) = caller else {
        return Err(ApiError::forbidden(
            "confirmations are requested with the calling agent's token, not the admin token",
        ));
    };
    app.rate.check(&me)?;
    let b: RequestBody = read(&app, body, None)?;
    if b.agent != me {
        return Err(ApiError::forbidden(format!(
            "the agent at /agent is {:?}, but the token belongs to agent {me:?}; an agent requests confirmations only for itself",
            b.agent
        )));
    }
    check_id("the call id at /call_id", &b.call_id)?;
    if let Some(task) = &b.task_id {
        check_id("the task id at /task_id", task)?;
    }
    if b.tool.is_empty() {
        return Err(ApiError::bad_request(
            "bad_tool",
            "the tool name at /tool is empty",
        ));
    }
    let pending = Confirmation::pending(b.agent, b.tool, b.call_id, b.arguments, b.task_id);
    let fresh_id = pending.id.clone();
    let stored = app.confirmations.request(pending).await.map_err(refusal)?;
    let status = if stored.id == fresh_id {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(stored)))
}

/// A page of the confirmations, oldest first, optionally in one state, with their number
/// (admin token).
#[utoipa::path(
    get,
    path = "/v1/confirmations",
    tag = "confirmations",
    params(StateFilter),
    responses(
        (status = 200, description = "A page of confirmations", body = ConfirmationPage),
        (status = 400, description = "Unknown state, or a bad `limit` or `after`", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn list(
    State(app): State<AppState>,
    _admin: Admin,
    ApiQuery(filter): ApiQuery<StateFilter>,
) -> Result<Json<ConfirmationPage>, ApiError> {
    let state = match filter.state.as_deref() {
        None => None,
        Some(s) => Some(ConfirmationState::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                "bad_query",
                format!("state {s:?} is unknown; expected pending, approved, rejected or consumed"),
            )
        })?),
    };
    let page = app
        .confirmations
        .page(state, filter.after.as_deref(), limit(filter.limit))
        .await
        .map_err(refusal)?;
    Ok(Json(ConfirmationPage::of(page, |c| c)))
}

/// One confirmation (admin token, or the agent it belongs to).
#[utoipa::path(
    get,
    path = "/v1/confirmations/{id}",
    tag = "confirmations",
    params(("id" = String, Path, description = "The confirmation's id")),
    responses(
        (status = 200, description = "The confirmation", body = Confirmation),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's confirmation", body = ErrorBody),
        (status = 404, description = "No such confirmation", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Confirmation>, ApiError> {
    let c = found(&app, &id).await?;
    owner_or_admin(&caller, &c)?;
    Ok(Json(c))
}

async fn decide(
    app: AppState,
    _admin: Admin,
    id: String,
    body: Result<Bytes, BytesRejection>,
    approve: bool,
) -> Result<Json<Confirmation>, ApiError> {
    check_id("the confirmation id", &id)?;
    let b: DecisionBody = read(&app, body, Some(DecisionBody::default()))?;
    let c = app
        .confirmations
        .decide(&id, approve, "admin", b.note)
        .await
        .map_err(refusal)?;
    tracing::info!(confirmation = %c.id, agent = %c.agent, tool = %c.tool, state = c.state.as_str(), "decided");
    Ok(Json(c))
}

/// Approves a pending confirmation (admin token); the agent may then run that call once.
#[utoipa::path(
    post,
    path = "/v1/confirmations/{id}/approve",
    tag = "confirmations",
    params(("id" = String, Path, description = "The confirmation's id")),
    request_body(content = Option<DecisionBody>, description = "Optional note"),
    responses(
        (status = 200, description = "Approved", body = Confirmation),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such confirmation", body = ErrorBody),
        (status = 409, description = "Already decided", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn approve(
    State(app): State<AppState>,
    admin: Admin,
    ApiPath(id): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Confirmation>, ApiError> {
    decide(app, admin, id, body, true).await
}

/// Rejects a pending confirmation (admin token); the call never runs.
#[utoipa::path(
    post,
    path = "/v1/confirmations/{id}/reject",
    tag = "confirmations",
    params(("id" = String, Path, description = "The confirmation's id")),
    request_body(content = Option<DecisionBody>, description = "Optional note"),
    responses(
        (status = 200, description = "Rejected", body = Confirmation),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 404, description = "No such confirmation", body = ErrorBody),
        (status = 409, description = "Already decided", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn reject(
    State(app): State<AppState>,
    admin: Admin,
    ApiPath(id): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Confirmation>, ApiError> {
    decide(app, admin, id, body, false).await
}

/// Uses an approval for the call with exactly these arguments (the owning agent's token);
/// succeeds once.
#[utoipa::path(
    post,
    path = "/v1/confirmations/{id}/consume",
    tag = "confirmations",
    params(("id" = String, Path, description = "The confirmation's id")),
    request_body = ConsumeBody,
    responses(
        (status = 200, description = "Used: run the call now", body = Confirmation),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's confirmation, or the admin token", body = ErrorBody),
        (status = 404, description = "No such confirmation", body = ErrorBody),
        (status = 409, description = "Pending, rejected or already used", body = ErrorBody),
        (status = 422, description = "The arguments differ from the approved ones", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn consume(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Confirmation>, ApiError> {
    let c = found(&app, &id).await?;
    match &caller {
        Caller::Agent(a) if *a == c.agent => {}
        _ => {
            return Err(ApiError::forbidden(format!(
                "only agent {:?} may use confirmation {id}",
                c.agent
            )));
        }
    }
    let b: ConsumeBody = read(&app, body, None)?;
    let used = app
        .confirmations
        .consume(&id, &b.arguments)
        .await
        .map_err(refusal)?;
    Ok(Json(used))
}
