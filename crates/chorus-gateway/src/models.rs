//! `GET /v1/models` and `GET /v1/models/{id}`: the one model the gateway serves.

use axum::Json;
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::state::Gateway;

fn model(gateway: &Gateway) -> Value {
    json!({"id": gateway.config.model, "object": "model", "created": 0, "owned_by": "chorus-gateway"})
}

/// The list of models.
pub fn list(gateway: &Gateway) -> Json<Value> {
    Json(json!({"object": "list", "data": [model(gateway)]}))
}

/// One model, or a 404.
pub fn one(gateway: &Gateway, id: &str) -> Result<Json<Value>, ApiError> {
    if id == gateway.config.model {
        return Ok(Json(model(gateway)));
    }
    Err(ApiError::status(
        StatusCode::NOT_FOUND,
        "invalid_request_error",
        "model_not_found",
        format!("The model `{id}` does not exist"),
    ))
}
