//! `GET /v1/blobs/{name}`: the bytes of a kept image or audio clip.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;

use crate::api::extract::ApiPath;
use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// An image or audio clip taken out of a stored message (any agent's token or the admin token).
#[utoipa::path(
    get,
    path = "/v1/blobs/{name}",
    tag = "media",
    params(("name" = String, Path, description = "`sha256-<hex>.<ext>`, as in the stored message's URL")),
    responses(
        (status = 200, description = "The bytes, with their content type", content_type = "application/octet-stream"),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 404, description = "No such blob", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn blob(
    State(app): State<AppState>,
    _caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Response, ApiError> {
    let found = app.blobs.get(&name).await.map_err(|e| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "store_unavailable",
            e.to_string(),
        )
    })?;
    let Some((bytes, mime)) = found else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such blob; blob URLs look like /v1/blobs/sha256-<64 hex>.<ext> and come from stored messages",
        ));
    };
    let mut response = Response::new(Body::from(bytes));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(mime));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=31536000, immutable"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Ok(response)
}
