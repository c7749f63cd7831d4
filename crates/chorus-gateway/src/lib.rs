//! chorus-gateway: an OpenAI-compatible server for gpt-oss in front of a raw completions engine.
//!
//! Clients speak Chat Completions; the gateway renders each conversation into Harmony token ids
//! itself (token-exact with openai-harmony, past reasoning kept or dropped the way gpt-oss was
//! trained), sends them to the engine's `/v1/completions` (vLLM, SGLang), and reads the reply
//! token by token with the lenient Harmony parser into content, reasoning and tool calls. What
//! the parser repaired is listed (the `x-chorus-repairs` header and a `chorus` field); what it
//! cannot read is a 502 with the raw text, never a 200 carrying an error.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let config = chorus_gateway::GatewayConfig {
//!     upstream: "http://127.0.0.1:8000/v1".into(),
//!     model: "openai/gpt-oss-20b".into(),
//!     ..Default::default()
//! };
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! chorus_gateway::serve(config, listener, std::future::pending()).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod chat;
mod config;
mod error;
mod fields;
mod generate;
mod metrics;
mod models;
mod prompt;
mod reply;
mod responses;
mod state;
mod stored;
mod upstream;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;

pub use config::{GatewayConfig, UpstreamKind, hash_key};
pub use error::ApiError;
pub use generate::REPAIRS_HEADER;

type Shared = Arc<state::Gateway>;

/// The gateway's routes for `config` (checked first).
pub fn router(config: GatewayConfig) -> Result<Router, String> {
    let gateway: Shared = Arc::new(state::Gateway::new(config)?);
    Ok(Router::new()
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/responses", post(create_response))
        .route(
            "/v1/responses/{id}",
            get(get_response).delete(delete_response),
        )
        .route("/v1/models", get(list_models))
        .route("/v1/models/{id}", get(one_model))
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(gateway))
}

/// Serves the gateway on `listener` until `shutdown` completes.
pub async fn serve(
    config: GatewayConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(config).map_err(std::io::Error::other)?;
    // Streamed replies are many small writes: without TCP_NODELAY, Nagle's algorithm holds
    // each one back for the client's delayed ACK (40 ms a stream, measured).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn chat_completions(
    State(gateway): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    chat::completions(gateway, headers, body).await
}

async fn create_response(
    State(gateway): State<Shared>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    responses::create(gateway, headers, body).await
}

async fn get_response(
    State(gateway): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match gateway
        .authorize(&headers)
        .and_then(|()| responses::get(&gateway, &id))
    {
        Ok(found) => found.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn delete_response(
    State(gateway): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match gateway
        .authorize(&headers)
        .and_then(|()| responses::delete(&gateway, &id))
    {
        Ok(found) => found.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn list_models(State(gateway): State<Shared>, headers: HeaderMap) -> Response {
    match gateway.authorize(&headers) {
        Ok(()) => models::list(&gateway).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn one_model(
    State(gateway): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match gateway
        .authorize(&headers)
        .and_then(|()| models::one(&gateway, &id))
    {
        Ok(model) => model.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn metrics(State(gateway): State<Shared>) -> Response {
    (
        [(
            "content-type",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        gateway.metrics.render(),
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::status(
        axum::http::StatusCode::NOT_FOUND,
        "invalid_request_error",
        "unknown_url",
        "no such route; this gateway serves POST /v1/chat/completions, POST /v1/responses (GET and DELETE /v1/responses/ID) and GET /v1/models",
    )
}
