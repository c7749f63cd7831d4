//! The tower-http layers around every route: a request id (`x-request-id`, kept from the
//! caller or made, and sent back), a server span per request after the OpenTelemetry HTTP
//! conventions, CORS when configured; the request timeout is applied in [`crate::api`], to
//! every route but the event streams.

use std::time::Duration;

use axum::Router;
use axum::extract::MatchedPath;
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;
use tracing::field::Empty;

use crate::config::CorsConfig;

/// The request id header.
pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The timeout layer of the routes that answer at once (503 when the answer is late).
pub(crate) fn timeout(limit: Duration) -> TimeoutLayer {
    TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, limit)
}

/// `router` inside the request-id, trace and CORS layers.
pub(crate) fn around(router: Router, cors_config: &CorsConfig) -> Router {
    let router = match cors(cors_config) {
        Some(cors) => router.layer(cors),
        None => router,
    };
    router
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(record_response),
        )
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
}

/// The server span of one request: `{method} {route}`, with the request id, child of the
/// caller's `traceparent` when it sent one.
fn request_span<B>(request: &Request<B>) -> Span {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let method = request.method().as_str();
    let name = match &route {
        Some(route) => format!("{method} {route}"),
        None => method.to_owned(),
    };
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let span = tracing::info_span!(
        "request",
        otel.name = name,
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        url.path = request.uri().path(),
        request.id = id,
        http.response.status_code = Empty,
        error.type = Empty,
    );
    // A caller's W3C `traceparent` makes the request part of its trace.
    let traceparent = crate::observe::traceparent(request.headers());
    crate::telemetry::link(&span, traceparent.as_deref());
    span
}

/// Records the status (and `error.type` for a 5xx) on the request's span, and logs the answer
/// at `debug`.
fn record_response<B>(response: &Response<B>, latency: Duration, span: &Span) {
    let status = response.status();
    tracing::debug!(
        status = status.as_u16(),
        latency_ms = latency.as_secs_f64() * 1000.0,
        "answered"
    );
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("error.type", status.as_str());
    }
}

/// The CORS layer of `config` (checked by [`CorsConfig::problem`]); `None` when no origin is
/// listed.
fn cors(config: &CorsConfig) -> Option<CorsLayer> {
    if config.allow_origins.is_empty() {
        return None;
    }
    let origins = if config.allow_origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            config
                .allow_origins
                .iter()
                .filter_map(|o| HeaderValue::from_str(o).ok()),
        )
    };
    let mut layer = CorsLayer::new()
        .allow_origin(origins)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            HeaderName::from_static("last-event-id"),
            HeaderName::from_static("traceparent"),
            REQUEST_ID,
        ])
        .expose_headers([REQUEST_ID, header::RETRY_AFTER]);
    if let Some(secs) = config.max_age_secs {
        layer = layer.max_age(Duration::from_secs(secs));
    }
    Some(layer)
}
