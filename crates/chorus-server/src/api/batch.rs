//! Batch requests, each item answered on its own: `POST /v1/messages/batch` publishes several
//! documents (as SQS's SendMessageBatch), `POST /v1/agents/{agent}/inbox/ack` acknowledges
//! several held deliveries. Every item goes through the checks a single request makes; the
//! documents are stored concurrently (sharing the store's commits), the acknowledgements in one
//! call to the store.

use std::collections::HashSet;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use chorus_bus::Delivery;
use futures::future::join_all;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_path_to_error::Segment;
use utoipa::ToSchema;

use crate::api::extract::ApiPath;
use crate::api::inbox::{Delivered, SettleOptions, acked, held, not_held};
use crate::api::publish::{body_error, named_id, publish_body, publisher};
use crate::auth::Caller;
use crate::config::MAX_IN_FLIGHT;
use crate::error::{ApiError, ErrorBody, IssueBody};
use crate::ids::check_id;
use crate::observe::traceparent;
use crate::state::AppState;

/// Documents one batch publish carries at most.
pub const MAX_MESSAGES: usize = 100;
/// Acknowledgements one batch carries at most (as many deliveries as a stream may hold).
pub const MAX_ACKS: usize = MAX_IN_FLIGHT;

/// How one document of a batch publish went.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublishResult {
    /// 201 stored, 200 already stored (nothing stored again), else the status a single publish
    /// of the document would have had (400, 403, 422, 429, 503).
    pub status: u16,
    /// The message id; for a refused document, the id it names when that is a safe id.
    pub id: Option<String>,
    /// The inboxes the message was stored in (stored documents only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queues: Option<Vec<String>>,
    /// Why the document was refused; nothing of it was stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<ErrorBody>,
}

/// The answer to a batch publish: one result per document, in the order sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublishResults {
    /// The results, in the order of the documents.
    pub results: Vec<PublishResult>,
}

/// Publishes up to 100 messages or handoffs in one request; each is checked, stored and
/// answered on its own.
///
/// Each document goes through exactly what `POST /v1/messages` does (sender, ids, policy,
/// validation, media, redaction, duplicate ids, the per-agent rate limit per document); a
/// refused one stores nothing and does not hold back the others. The documents are stored
/// concurrently, sharing the store's commits: their order in an inbox is not guaranteed.
#[utoipa::path(
    post,
    path = "/v1/messages/batch",
    tag = "messages",
    request_body(
        content = Vec<Object>,
        content_type = "application/json",
        description = "A JSON array of 1 to 100 documents, each a chorus message or a seed-003 handoff packet sent as your agent"
    ),
    responses(
        (status = 200, description = "Every document answered on its own, in the order sent", body = PublishResults),
        (status = 400, description = "The body is not a JSON array, is empty or holds more than 100 documents", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "The admin token cannot publish", body = ErrorBody),
        (status = 413, description = "The body is larger than the limit", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn publish_batch(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<PublishResults>, ApiError> {
    let agent = publisher(caller)?;
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let items: Vec<&RawValue> = serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(
            "malformed_json",
            format!(
                "the body must be a JSON array of messages or handoffs: {e} (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })?;
    bounded(items.len(), MAX_MESSAGES, "documents")?;
    let incoming = traceparent(&headers);
    let published = items.iter().map(|item| {
        // Each document is its own bytes of the body, as sent.
        let text = item.get();
        let one = publish_body(
            &app,
            &agent,
            incoming.clone(),
            Ok(bytes.slice_ref(text.as_bytes())),
        );
        async move {
            match one.await {
                Ok((status, Json(receipt))) => PublishResult {
                    status: status.as_u16(),
                    id: Some(receipt.id),
                    queues: Some(receipt.queues),
                    problem: None,
                },
                Err(e) => PublishResult {
                    status: e.status.as_u16(),
                    id: serde_json::from_str(text).ok().as_ref().and_then(named_id),
                    queues: None,
                    problem: Some(e.body),
                },
            }
        }
    });
    let results = join_all(published).await;
    Ok(Json(PublishResults { results }))
}

/// One held delivery to acknowledge.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AckItem {
    /// The id of the delivered message.
    pub message_id: String,
    /// The `attempt` of the event being acknowledged: when the message was delivered again
    /// since, that item is answered 409 and the newer delivery is left alone.
    #[serde(default)]
    pub attempt: Option<u32>,
}

/// How one acknowledgement of a batch went.
#[derive(Debug, Serialize, ToSchema)]
pub struct AckResult {
    /// The message id, as sent.
    pub message_id: String,
    /// 204 acknowledged, else the status a single ack would have had (400, 404, 409, 429, 503).
    pub status: u16,
    /// Why it was not acknowledged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<ErrorBody>,
}

/// The answer to a batch of acknowledgements: one result per item, in the order sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct AckResults {
    /// The results, in the order of the items.
    pub results: Vec<AckResult>,
}

/// Acknowledges up to 1000 held deliveries of `agent`'s inbox in one request; each is
/// answered on its own, as `POST /v1/agents/{agent}/inbox/{message_id}/ack` would answer it.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent}/inbox/ack",
    tag = "inbox",
    params(("agent" = String, Path, description = "The agent (or pool) whose inbox delivered the messages")),
    request_body(
        content = Vec<AckItem>,
        content_type = "application/json",
        description = "A JSON array of 1 to 1000 deliveries: `[{\"message_id\": \"m1\", \"attempt\": 1}, …]`"
    ),
    responses(
        (status = 200, description = "Every acknowledgement answered on its own, in the order sent", body = AckResults),
        (status = 400, description = "An unsafe agent id; a body that is not such an array, empty or longer than 1000", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "Another agent's inbox", body = ErrorBody),
        (status = 413, description = "The body is larger than the limit", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn ack_batch(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(agent): ApiPath<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<AckResults>, ApiError> {
    check_id("the agent id", &agent)?;
    app.policy.may_read(&caller, &agent)?;
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let items = ack_items(&bytes)?;
    bounded(items.len(), MAX_ACKS, "acknowledgements")?;
    // Every item is checked as a single ack is (a repeated id as a second ack of it would be:
    // not held); the held ones are then acknowledged together, in one call to the store (one
    // writer job of one commit on SQLite), and each is answered on its own.
    let mut outcomes: Vec<Result<(), ApiError>> = Vec::with_capacity(items.len());
    let mut found = Vec::new();
    let mut seen = HashSet::with_capacity(items.len());
    for (at, item) in items.iter().enumerate() {
        let checked = if seen.insert(item.message_id.as_str()) {
            let delivered = Delivered {
                agent: agent.clone(),
                message_id: item.message_id.clone(),
            };
            let options = SettleOptions {
                attempt: item.attempt,
            };
            held(&app, &caller, &delivered, options)
        } else {
            Err(not_held(&agent, &item.message_id))
        };
        outcomes.push(checked.map(|delivery| found.push((at, delivery))));
    }
    if !found.is_empty() {
        let deliveries: Vec<Delivery> = found.iter().map(|(_, h)| h.delivery().clone()).collect();
        let mut settled = app.bus.ack_each(&deliveries).await.into_iter();
        for (at, delivery) in found {
            outcomes[at] = match settled.next() {
                Some(Ok(())) => {
                    acked(&app, &agent, delivery);
                    Ok(())
                }
                Some(Err(e)) => Err(e.into()),
                None => Err(ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the store answered fewer acknowledgements than it was given",
                )),
            };
        }
    }
    let results = items
        .into_iter()
        .zip(outcomes)
        .map(|(item, outcome)| {
            let (status, problem) = match outcome {
                Ok(()) => (StatusCode::NO_CONTENT.as_u16(), None),
                Err(e) => (e.status.as_u16(), Some(e.body)),
            };
            AckResult {
                message_id: item.message_id,
                status,
                problem,
            }
        })
        .collect();
    Ok(Json(AckResults { results }))
}

/// The items of a batch of acknowledgements, or a 400 naming the JSON pointer of the problem.
fn ack_items(bytes: &[u8]) -> Result<Vec<AckItem>, ApiError> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let pointer: String = e
            .path()
            .iter()
            .map(|segment| match segment {
                Segment::Seq { index } => format!("/{index}"),
                Segment::Map { key } => format!("/{}", key.replace('~', "~0").replace('/', "~1")),
                other => format!("/{other}"),
            })
            .collect();
        let mut refused = ApiError::bad_request(
            "malformed_json",
            format!(
                "the body must be a JSON array of deliveries to acknowledge; at {:?}: {}",
                pointer,
                e.inner()
            ),
        );
        refused.body.issues = vec![IssueBody {
            pointer,
            message: e.inner().to_string(),
            hint: Some(r#"send [{"message_id": "m1", "attempt": 1}, ...]"#.into()),
        }];
        refused
    })
}

/// Refuses (400) a batch of no items or of more than `max`.
fn bounded(len: usize, max: usize, what: &str) -> Result<(), ApiError> {
    match len {
        0 => Err(ApiError::bad_request(
            "empty_batch",
            format!("the batch holds no {what}; send 1 to {max}"),
        )),
        n if n > max => Err(ApiError::bad_request(
            "batch_too_large",
            format!("the batch holds {n} {what}; at most {max} are taken at once: split it"),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn a_malformed_ack_item_is_refused_at_its_pointer() {
        let e = ack_items(br#"[{"message_id": "m1"}, {"message_id": "m2", "attempt": "one"}]"#)
            .unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(e.body.issues[0].pointer, "/1/attempt");
        let e = ack_items(br#"[{"id": "m1"}]"#).unwrap_err();
        assert_eq!(e.body.issues[0].pointer, "/0/id", "{:?}", e.body);
        let items =
            ack_items(br#"[{"message_id": "m1"}, {"message_id": "m2", "attempt": 2}]"#).unwrap();
        assert_eq!(
            items
                .iter()
                .map(|i| (i.message_id.as_str(), i.attempt))
                .collect::<Vec<_>>(),
            [("m1", None), ("m2", Some(2))]
        );
    }

    #[test]
    fn a_batch_holds_one_to_max_items() {
        assert_eq!(
            bounded(0, 3, "documents").unwrap_err().body.error,
            "empty_batch"
        );
        assert!(bounded(1, 3, "documents").is_ok());
        assert!(bounded(3, 3, "documents").is_ok());
        let e = bounded(4, 3, "documents").unwrap_err();
        assert_eq!(
            (e.status, e.body.error.as_str()),
            (StatusCode::BAD_REQUEST, "batch_too_large")
        );
    }
}
