//! The web UI: static files compiled into the binary, served at `/` and under `/ui/`. The
//! page itself holds no data; it asks for the admin token and reads the admin API with it.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use chorus_core::handoff::HandoffType;
use chorus_core::schema::handoff_data_schema;

use crate::state::AppState;

/// Only the page's own files run; nothing loads from elsewhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; \
                   media-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One of the UI's files with its media type, never cached stale across server versions.
fn file(body: impl IntoResponse, media_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The data schemas of the standard handoff types as one JSON object by type name: the task page
/// draws a payload's fields in their order, with their descriptions (no data; no token).
fn handoff_data() -> Response {
    let schemas: serde_json::Map<String, serde_json::Value> = HandoffType::STANDARD
        .iter()
        .filter_map(|t| Some((t.as_str().to_owned(), handoff_data_schema(t)?)))
        .collect();
    file(
        serde_json::Value::Object(schemas).to_string(),
        "application/json",
    )
}

/// The environment variable naming a trace viewer's address for a trace id, e.g.
/// `http://127.0.0.1:16686/trace/{trace_id}` (Jaeger): the task page links each entry's trace
/// there.
pub const TRACE_URL_VAR: &str = "CHORUS_TRACE_URL";

/// What the page may know of the server's setup (no data, no token): the trace viewer's address
/// template, or null.
fn settings() -> Response {
    let trace_url = std::env::var(TRACE_URL_VAR).ok().filter(|t| {
        t.contains("{trace_id}") && (t.starts_with("http://") || t.starts_with("https://"))
    });
    file(
        serde_json::json!({ "trace_url": trace_url }).to_string(),
        "application/json",
    )
}

/// The routes of the UI's files (they need no token).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/",
            get(|| async {
                file(
                    include_str!("../../assets/index.html"),
                    "text/html; charset=utf-8",
                )
            }),
        )
        .route(
            "/ui/app.js",
            get(|| async {
                file(
                    include_str!("../../assets/app.js"),
                    "text/javascript; charset=utf-8",
                )
            }),
        )
        .route(
            "/ui/views.js",
            get(|| async {
                file(
                    include_str!("../../assets/views.js"),
                    "text/javascript; charset=utf-8",
                )
            }),
        )
        .route(
            "/ui/story.js",
            get(|| async {
                file(
                    include_str!("../../assets/story.js"),
                    "text/javascript; charset=utf-8",
                )
            }),
        )
        .route("/ui/handoff-data.json", get(|| async { handoff_data() }))
        .route("/ui/settings.json", get(|| async { settings() }))
        .route(
            "/ui/app.css",
            get(|| async {
                file(
                    include_str!("../../assets/app.css"),
                    "text/css; charset=utf-8",
                )
            }),
        )
}
