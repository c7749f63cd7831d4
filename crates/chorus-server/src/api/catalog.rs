//! Admin listings: the tasks and conversations the store knows, most recently active first, a
//! page at a time.

use crate::api::bodies::Track;
use crate::api::extract::Admin;
use crate::api::extract::ApiQuery;
use crate::api::pages::{PageQuery, TrackPage, listing_error};
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;

/// A page of the known tasks, most recently active first, with their number (admin token).
#[utoipa::path(
    get,
    path = "/v1/tasks",
    tag = "admin",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of tasks", body = TrackPage),
        (status = 400, description = "A bad `limit` or `after`", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn tasks(
    State(app): State<AppState>,
    _admin: Admin,
    ApiQuery(page): ApiQuery<PageQuery>,
) -> Result<Json<TrackPage>, ApiError> {
    let tasks = app
        .bus
        .tasks_page(page.after(), page.limit())
        .await
        .map_err(listing_error)?;
    Ok(Json(TrackPage::of(tasks, Track::from)))
}

/// A page of the known conversations, most recently active first, with their number (admin
/// token).
#[utoipa::path(
    get,
    path = "/v1/conversations",
    tag = "admin",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of conversations", body = TrackPage),
        (status = 400, description = "A bad `limit` or `after`", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn conversations(
    State(app): State<AppState>,
    _admin: Admin,
    ApiQuery(page): ApiQuery<PageQuery>,
) -> Result<Json<TrackPage>, ApiError> {
    let conversations = app
        .bus
        .conversations_page(page.after(), page.limit())
        .await
        .map_err(listing_error)?;
    Ok(Json(TrackPage::of(conversations, Track::from)))
}
