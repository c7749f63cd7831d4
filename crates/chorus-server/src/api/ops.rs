//! Operations endpoints: health, metrics, the OpenAPI document.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use serde::Serialize;
use utoipa::ToSchema;

use crate::api::extract::Admin;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// How long `/healthz` waits for the store's write before calling it unhealthy.
const HEALTH_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The answer of `/healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok` when the store answers and takes a write.
    pub status: String,
}

/// Tells whether the server and its store answer, the store taking a write (a store that only
/// reads would answer every publish with 503).
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    responses(
        (status = 200, description = "Serving", body = Health),
        (status = 503, description = "The store does not answer or cannot write", body = ErrorBody),
    )
)]
pub async fn healthz(State(app): State<AppState>) -> Result<Json<Health>, ApiError> {
    // Publishes failing to write (a full disk, a file-size limit) while a probe's tiny write
    // still fits: the store is not serving.
    if let Some(why) = app.writes.failing() {
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            format!("the store refuses the writes publishes make: {why}"),
        );
        e.retry_after_secs = Some(1);
        return Err(e);
    }
    match tokio::time::timeout(HEALTH_WAIT, app.bus.probe_write()).await {
        Ok(done) => done?,
        Err(_) => {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "store_unavailable",
                format!(
                    "the store did not take a write within {} s (locked, or too slow to serve)",
                    HEALTH_WAIT.as_secs()
                ),
            ));
        }
    }
    Ok(Json(Health {
        status: "ok".into(),
    }))
}

/// Counters and per-inbox backlog in the Prometheus / OpenMetrics text format (admin token).
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    responses(
        (status = 200, description = "The metrics", content_type = "application/openmetrics-text", body = String),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn metrics(
    State(app): State<AppState>,
    _admin: Admin,
) -> Result<impl IntoResponse, ApiError> {
    app.metrics.refresh_backlog(app.bus.as_ref()).await?;
    let letters = app.bus.dead_letter_count().await?;
    app.metrics
        .dead_letters
        .set(i64::try_from(letters).unwrap_or(i64::MAX));
    Ok((
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.render(),
    ))
}
