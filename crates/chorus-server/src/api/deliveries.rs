//! The delivery history of messages (admin token): for each copy, every send with its reader
//! and stream, hand-overs, nacks, acks and dead letters, as the task page shows them.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::admin::message_ids;
use crate::api::extract::{Admin, ApiQuery};
use crate::error::{ApiError, ErrorBody};
use crate::history::{Event, History};
use crate::state::AppState;

/// Whose history.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeliveriesQuery {
    /// Comma-separated message ids (1 to 100).
    pub message_id: String,
}

/// The history of one message.
#[derive(Debug, Serialize, ToSchema)]
pub struct MessageHistory {
    /// The message.
    pub message_id: String,
    /// What happened to its copies, in time order. Expiry and the store's own dead letters
    /// (`max_deliver`) are in its dead letters (`GET /v1/dead-letters?message_id=`).
    pub events: Vec<Event>,
}

/// The histories asked for, in the order of the ids.
#[derive(Debug, Serialize, ToSchema)]
pub struct Deliveries {
    /// One entry an id (with no events for a message never delivered, or unknown).
    pub items: Vec<MessageHistory>,
}

/// The delivery history of some messages (admin token).
#[utoipa::path(
    get,
    path = "/v1/deliveries",
    tag = "admin",
    params(DeliveriesQuery),
    responses(
        (status = 200, description = "The histories", body = Deliveries),
        (status = 400, description = "A bad `message_id`", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Not the admin token", body = ErrorBody),
        (status = 503, description = "The store failed", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn deliveries(
    State(app): State<AppState>,
    _admin: Admin,
    ApiQuery(query): ApiQuery<DeliveriesQuery>,
) -> Result<Json<Deliveries>, ApiError> {
    let mut items = Vec::new();
    for id in message_ids(&query.message_id)? {
        items.push(MessageHistory {
            message_id: id.to_owned(),
            events: History::of(app.bus.as_ref(), id).await?,
        });
    }
    Ok(Json(Deliveries { items }))
}
