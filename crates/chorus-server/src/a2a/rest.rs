//! The HTTP+JSON binding under an agent's or pool's URL: `POST …/message:send`,
//! `POST …/message:stream`, `GET …/tasks`, `GET …/tasks/{id}`, `POST …/tasks/{id}:cancel` and
//! `POST|GET …/tasks/{id}:subscribe`; refusals are `google.rpc.Status` bodies.

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chorus_core::Problem;
use serde_json::{Value, json};

use super::operations::{cancel, get, publish, send, subscribable};
use super::rpc::{self, RpcError};
use super::stream::{Framing, open_stream, stream_task};
use crate::auth::Caller;
use crate::state::AppState;

/// A refusal as the binding answers it: its HTTP status and `{"error": Status}`.
pub(super) fn refused(e: &RpcError) -> Response {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, Json(json!({"error": e.to_status()}))).into_response()
}

/// The request body: a JSON object (a `SendMessageRequest`), its fields under their JSON
/// names whichever ProtoJSON spelling it used.
fn body_object(body: &Bytes) -> Result<Value, RpcError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut v @ Value::Object(_)) => {
            super::spelling::json_names(&mut v).map_err(RpcError::params)?;
            Ok(v)
        }
        Ok(other) => Err(RpcError::params(Problem::expected(
            "",
            "a SendMessageRequest object",
            rpc::describe(&other),
        ))),
        Err(e) => Err(RpcError::new(
            rpc::PARSE_ERROR,
            format!("the body is not JSON: {e}"),
        )),
    }
}

/// `POST /a2a/{name}/message:send`.
pub async fn message_send(
    State(app): State<AppState>,
    Path(inbox): Path<String>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match super::read_body(&app, body) {
        Ok(body) => body,
        Err(e) => return e.into_response(),
    };
    let sent = async {
        super::known_inbox(&app, &inbox)?;
        let params = body_object(&body)?;
        send(&app, &caller, Some(&inbox), &params).await
    };
    match super::in_time(&app, sent).await {
        Ok(task) => Json(json!({"task": task})).into_response(),
        Err(e) => refused(&e),
    }
}

/// `POST /a2a/{name}/message:stream`.
pub async fn message_stream(
    State(app): State<AppState>,
    Path(inbox): Path<String>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match super::read_body(&app, body) {
        Ok(body) => body,
        Err(e) => return e.into_response(),
    };
    let published = async {
        super::known_inbox(&app, &inbox)?;
        let params = body_object(&body)?;
        let ticket = open_stream(&app, &caller)?;
        Ok((publish(&app, &caller, Some(&inbox), &params).await?, ticket))
    };
    match super::in_time(&app, published).await {
        Ok((task_id, ticket)) => {
            stream_task(app, caller, task_id, Framing::Rest, ticket).into_response()
        }
        Err(e) => refused(&e),
    }
}

/// `GET /a2a/{name}/tasks` (`ListTasks`): its fields as query parameters, under either
/// ProtoJSON spelling; numbers are read as numbers.
pub async fn tasks_list(
    State(app): State<AppState>,
    Path(inbox): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    caller: Caller,
) -> Response {
    const NUMBERS: [&str; 4] = ["pageSize", "page_size", "historyLength", "history_length"];
    let mut params = serde_json::Map::new();
    for (key, value) in query {
        let value = match value.parse::<u64>() {
            Ok(n) if NUMBERS.contains(&key.as_str()) => json!(n),
            _ => json!(value),
        };
        params.insert(key, value);
    }
    let listed = async {
        let mut params = Value::Object(params);
        super::spelling::json_names(&mut params).map_err(RpcError::params)?;
        super::known_inbox(&app, &inbox)?;
        super::listing::list(&app, &caller, Some(&inbox), &params).await
    };
    match super::in_time(&app, listed).await {
        Ok(listing) => Json(listing).into_response(),
        Err(e) => refused(&e),
    }
}

/// `GET /a2a/{name}/tasks/{id}` (with `historyLength`), and `GET …/tasks/{id}:subscribe`.
pub async fn task_get(
    State(app): State<AppState>,
    Path((inbox, task)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
    caller: Caller,
) -> Response {
    if let Some(id) = task.strip_suffix(":subscribe") {
        return subscribe(app, caller, &inbox, id).await;
    }
    let mut params = json!({"id": task});
    if let Some(n) = query
        .get("historyLength")
        .or_else(|| query.get("history_length"))
    {
        params["historyLength"] = n.parse::<u64>().map_or_else(|_| json!(n), |n| json!(n));
    }
    let got = async {
        super::known_inbox(&app, &inbox)?;
        get(&app, &caller, &params).await
    };
    match super::in_time(&app, got).await {
        Ok(task) => Json(task).into_response(),
        Err(e) => refused(&e),
    }
}

/// `POST /a2a/{name}/tasks/{id}:cancel` and `POST …/tasks/{id}:subscribe`.
pub async fn task_action(
    State(app): State<AppState>,
    Path((inbox, task)): Path<(String, String)>,
    caller: Caller,
) -> Response {
    if let Some(id) = task.strip_suffix(":subscribe") {
        return subscribe(app, caller, &inbox, id).await;
    }
    let Some(id) = task.strip_suffix(":cancel") else {
        return refused(&RpcError::new(
            rpc::METHOD_NOT_FOUND,
            format!("no action in {task:?}; POST tasks/{{id}}:cancel or tasks/{{id}}:subscribe"),
        ));
    };
    let canceled = async {
        super::known_inbox(&app, &inbox)?;
        cancel(&app, &caller, &json!({"id": id})).await
    };
    match super::in_time(&app, canceled).await {
        Ok(task) => Json(task).into_response(),
        Err(e) => refused(&e),
    }
}

async fn subscribe(app: AppState, caller: Caller, inbox: &str, id: &str) -> Response {
    let checked = async {
        super::known_inbox(&app, inbox)?;
        let ticket = open_stream(&app, &caller)?;
        Ok((
            subscribable(&app, &caller, &json!({"id": id})).await?,
            ticket,
        ))
    };
    match super::in_time(&app, checked).await {
        Ok((task_id, ticket)) => {
            stream_task(app, caller, task_id, Framing::Rest, ticket).into_response()
        }
        Err(e) => refused(&e),
    }
}
