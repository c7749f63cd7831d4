//! A2A v1.0 (Agent2Agent): every agent and pool of the config is an A2A agent with its own card
//! (`/a2a/{name}/.well-known/agent-card.json`) and endpoint `/a2a/{name}`, over JSON-RPC (`POST
//! /a2a/{name}`) and HTTP+JSON (`/a2a/{name}/message:send`, …); the hub's card at
//! `/.well-known/agent-card.json` lists them all, and its JSON-RPC endpoint (`POST /a2a`) takes
//! messages that name their recipient.
//!
//! An A2A message is published on the bus as the calling agent (its bearer token), through the
//! same checks as `POST /v1/messages`; a task is a chorus task, read back from the bus. The wire
//! shapes are written here as JSON rather than with the `a2a-lf` crate's types: the codec of
//! `chorus-formats` already reads and writes A2A messages (keeping unknown keys, which those
//! types drop), and the few other objects (card, task, status, JSON-RPC) are small; the
//! `a2a-sdk` tests check them against the official SDK.

mod card;
mod inbound;
mod jsonrpc;
mod listing;
mod operations;
mod rest;
mod rpc;
mod spelling;
mod stream;
mod task;
mod version;

use axum::Extension;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::auth::Caller;
use crate::connections::Scheme;
use crate::error::ApiError;
use crate::ids::check_id;
use crate::state::AppState;

/// The extension a message declares when a data part holds a seed-003 handoff packet.
pub const HANDOFF_EXTENSION: &str = chorus_formats::A2a::HANDOFF_EXTENSION;

/// The A2A routes: the cards and the JSON-RPC endpoints.
pub fn routes() -> Router<AppState> {
    // The endpoints answer at their card's URL with a trailing slash too, as clients that
    // join a base URL and a path send them.
    let json_rpc = Router::new()
        .route("/a2a", post(hub_rpc))
        .route("/a2a/", post(hub_rpc))
        .route("/a2a/{inbox}", post(inbox_rpc))
        .route("/a2a/{inbox}/", post(inbox_rpc))
        .route_layer(middleware::from_fn(version::json_rpc));
    let http_json = Router::new()
        .route("/a2a/{inbox}/message:send", post(rest::message_send))
        .route("/a2a/{inbox}/message:stream", post(rest::message_stream))
        .route("/a2a/{inbox}/tasks", get(rest::tasks_list))
        .route(
            "/a2a/{inbox}/tasks/{task}",
            get(rest::task_get).post(rest::task_action),
        )
        .route_layer(middleware::from_fn(version::http_json));
    Router::new()
        .route("/.well-known/agent-card.json", get(hub_card))
        .route("/a2a/{inbox}/.well-known/agent-card.json", get(inbox_card))
        .merge(json_rpc)
        .merge(http_json)
}

/// Task `id` as `caller` may see it, as an A2A `Task` with at most `history` of its latest
/// messages (for the MCP tools); else the HTTP status and why (404: none the caller may see).
#[cfg(feature = "mcp")]
pub(crate) async fn task_json(
    app: &AppState,
    caller: &Caller,
    id: &str,
    history: Option<usize>,
) -> Result<serde_json::Value, (u16, String)> {
    operations::load(app, caller, id)
        .await
        .map(|view| view.to_json(history))
        .map_err(|e| (e.http_status(), e.message))
}

/// Runs `operation`, one that answers at once, within the server's request timeout (as
/// `tower-http`'s timeout bounds the other routes; the streams are not bounded).
async fn in_time<T>(
    app: &AppState,
    operation: impl std::future::Future<Output = Result<T, rpc::RpcError>>,
) -> Result<T, rpc::RpcError> {
    let Some(limit) = app.request_timeout else {
        return operation.await;
    };
    tokio::time::timeout(limit, operation)
        .await
        .unwrap_or_else(|_| {
            Err(rpc::RpcError::new(
                rpc::TIMED_OUT,
                format!(
                    "no answer within the server's request timeout ({} s); a message sent may \
                     still have been published: GetTask its task before sending again",
                    limit.as_secs_f64()
                ),
            ))
        })
}

/// The names A2A reaches: every agent of the config and every pool an agent reads.
fn inboxes(app: &AppState) -> Vec<String> {
    app.policy.inboxes()
}

/// The inbox `name` as the A2A bindings refuse an unknown one (task not found would mislead).
fn known_inbox(app: &AppState, name: &str) -> Result<(), rpc::RpcError> {
    known(app, name).map_err(|e| rpc::RpcError::new(rpc::METHOD_NOT_FOUND, e.body.message))
}

/// The inbox `name`, when the config has it; else 404.
fn known(app: &AppState, name: &str) -> Result<(), ApiError> {
    check_id("the agent or pool", name)?;
    if inboxes(app).iter().any(|n| n == name) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!(
            "no agent or pool {name:?}; the hub's card at /.well-known/agent-card.json lists them"
        ),
    ))
}

/// A card, cacheable for a minute by its client only: its URLs come from the request's `Host`
/// and `X-Forwarded-Proto`, so a shared cache must neither serve one client's card to another
/// nor keep a card a forged `Host` made. Its `ETag` is a digest of its bytes: a request whose
/// `If-None-Match` names it is answered 304 with no body.
fn card_response(request: &HeaderMap, card: serde_json::Value) -> Response {
    use sha2::{Digest, Sha256};
    let body = card.to_string();
    let digest = Sha256::digest(body.as_bytes());
    let etag = format!("\"{}\"", hex::encode(&digest[..16]));
    let cached = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let headers = [
        (header::CACHE_CONTROL, "private, max-age=60".to_owned()),
        (header::VARY, "Host, X-Forwarded-Proto".to_owned()),
        (header::ETAG, etag),
    ];
    if cached {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (headers, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn hub_card(
    State(app): State<AppState>,
    scheme: Option<Extension<Scheme>>,
    headers: HeaderMap,
) -> Response {
    let base = card::base_url(&headers, scheme.map(|s| s.0));
    card_response(&headers, card::hub_card(&base, &inboxes(&app)))
}

async fn inbox_card(
    State(app): State<AppState>,
    Path(inbox): Path<String>,
    scheme: Option<Extension<Scheme>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    known(&app, &inbox)?;
    let base = card::base_url(&headers, scheme.map(|s| s.0));
    Ok(card_response(&headers, card::agent_card(&base, &inbox)))
}

/// The request body, or the answer to one that could not be read, as on every route: 413 too
/// large, 408 not whole within the request timeout, 400 cut short.
/// A body with a duplicate key anywhere (a data part's too) is refused as `POST /v1/messages`
/// refuses it, not read with the last key winning.
fn read_body(app: &AppState, body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let bytes = body.map_err(|e| crate::api::publish::body_error(&e, app.max_body_bytes))?;
    match crate::api::publish::parse_json(&bytes) {
        // A duplicate key, or nesting too deep (422 at the pointer).
        Err(e) if e.body.error == "invalid_message" => Err(e),
        // What is not JSON is answered by the binding's own parse error.
        _ => Ok(bytes),
    }
}

async fn hub_rpc(
    State(app): State<AppState>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(&app, body)?;
    Ok(jsonrpc::answer(app, caller, None, body).await)
}

async fn inbox_rpc(
    State(app): State<AppState>,
    Path(inbox): Path<String>,
    caller: Caller,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = read_body(&app, body)?;
    known(&app, &inbox)?;
    Ok(jsonrpc::answer(app, caller, Some(inbox), body).await)
}
