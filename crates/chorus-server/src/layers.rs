//! The layers around every request: a request id (`x-request-id`, kept from the caller or
//! made, and sent back), a server span per request after the OpenTelemetry HTTP conventions,
//! CORS when configured, the URL scheme, the body limit and the change announcements, and the
//! body's edge of [`crate::body_edge`] (an early 413, the body's deadline).
//!
//! They wrap the router as one service whose type is composed at compile time. A layer put on
//! axum's `Router` wraps every route instead, and each request then clones and boxes a service
//! and a future at each of them (with seven such layers, `clone_box` alone was 1.6 % of the
//! tokio workers' time in the `http_path` bench, and their allocations more). Inside the
//! router are only the request timeout (applied in [`crate::api`] to every route but the event
//! streams) and the trace layer, whose span is named after the route axum matched.

use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::body::{Bytes, HttpBody};
use axum::extract::{DefaultBodyLimit, MatchedPath};
use axum::http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode, header};
use axum::{BoxError, Extension};
use hyper::body::Incoming;
use tower::{Service, ServiceBuilder};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use tracing::Span;
use tracing::field::Empty;

use crate::body_edge::BodyEdgeLayer;
use crate::config::CorsConfig;
use crate::connections::Scheme;
use crate::live::{Live, Observe};

/// The request id header.
pub(crate) const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The timeout layer of the routes that answer at once (503 when the answer is late).
pub(crate) fn timeout(limit: Duration) -> TimeoutLayer {
    TimeoutLayer::with_status_code(StatusCode::SERVICE_UNAVAILABLE, limit)
}

/// What the layers around the router are set with.
pub(crate) struct Outer {
    /// CORS for the configured origins (none: no CORS headers).
    cors: Option<CorsLayer>,
    /// The largest request body, bytes.
    body_limit: usize,
    /// How long a request body may take to arrive whole (the request timeout).
    body_deadline: Option<Duration>,
    /// Where writing requests announce their changes.
    live: Live,
}

impl Outer {
    /// The layers of `cors_config`'s origins, with bodies up to `body_limit` bytes arriving
    /// within `body_deadline`, announcing to `live`.
    pub fn new(
        cors_config: &CorsConfig,
        body_limit: usize,
        body_deadline: Option<Duration>,
        live: Live,
    ) -> Outer {
        Outer {
            cors: cors(cors_config),
            body_limit,
            body_deadline,
            live,
        }
    }
}

/// `router` inside the request-id, trace, CORS, scheme, body-limit and announcing layers: the
/// service each connection serves.
pub(crate) fn around(
    router: Router,
    outer: Outer,
    scheme: Scheme,
) -> impl Service<
    Request<Incoming>,
    Response = Response<impl HttpBody<Data = Bytes, Error: Into<BoxError>> + Send + 'static>,
    Error = Infallible,
    Future: Send + 'static,
> + Clone
+ Send
+ 'static {
    // The trace layer is the one inside the router, where axum knows the route that matched
    // (the span's name); an exported span's name cannot change once it is entered.
    let router = router.layer(
        TraceLayer::new_for_http()
            .make_span_with(request_span)
            .on_response(record_response),
    );
    ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .option_layer(outer.cors)
        .layer(Extension(scheme))
        .layer(DefaultBodyLimit::max(outer.body_limit))
        .layer(Observe::new(outer.live))
        .layer(BodyEdgeLayer {
            limit: outer.body_limit,
            deadline: outer.body_deadline,
        })
        .service(router)
}

/// The server span of one request: `{method} {route}` (the method alone when no route
/// matched), with the request id, child of the caller's `traceparent` when it sent one.
fn request_span<B>(request: &Request<B>) -> Span {
    let method = request.method().as_str();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    // The fields are written out only when a subscriber listens.
    let span = tracing::info_span!(
        "request",
        otel.name = %SpanName { method, route },
        otel.kind = "server",
        http.request.method = method,
        http.route = route,
        url.path = request.uri().path(),
        request.id = request
            .headers()
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default(),
        http.response.status_code = Empty,
        error.type = Empty,
    );
    if !span.is_disabled() {
        // A caller's W3C `traceparent` makes the request part of its trace.
        let traceparent = crate::observe::traceparent(request.headers());
        crate::telemetry::link(&span, traceparent.as_deref());
    }
    span
}

/// A request span's name, written only when the span is.
struct SpanName<'a> {
    method: &'a str,
    route: Option<&'a str>,
}

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.route {
            Some(route) => write!(f, "{} {route}", self.method),
            None => f.write_str(self.method),
        }
    }
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
