//! The OTLP/HTTP(S) (protobuf) span exporter and W3C trace-context propagation.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::{Span, Subscriber};
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::registry::LookupSpan;

/// A tracing layer exporting spans over OTLP/HTTP (protobuf), and the provider to flush.
///
/// Where to: `endpoint` when given (`/v1/traces` added when missing), else the exporter's own
/// reading of `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) and
/// `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` added); it also reads
/// `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` and `…TIMEOUT`. An `https://` endpoint is verified
/// against the usual roots plus the PEM file in `OTEL_EXPORTER_OTLP_(TRACES_)CERTIFICATE`, with
/// a client certificate from `…CLIENT_CERTIFICATE` and `…CLIENT_KEY` when set. The resource's
/// `service.name` is `service` unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names
/// one.
pub(super) fn layer<S>(
    service: &'static str,
    endpoint: Option<&str>,
) -> Result<(OpenTelemetryLayer<S, SdkTracer>, SdkTracerProvider), String>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let mut builder = SpanExporter::builder().with_http();
    if let Some(endpoint) = endpoint {
        let base = endpoint.trim_end_matches('/');
        let url = if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        };
        builder = builder.with_endpoint(url);
    }
    builder = builder.with_http_client(http_client()?);
    let exporter = builder
        .build()
        .map_err(|e| format!("cannot build the OTLP exporter: {e}"))?;
    let mut resource = Resource::builder();
    if !service_named_by_env() {
        resource = resource.with_service_name(service);
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("chorus");
    Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
}

/// The value of the traces-specific variable `OTEL_EXPORTER_OTLP_TRACES_{name}`, else of
/// `OTEL_EXPORTER_OTLP_{name}`.
fn otlp_var(name: &str) -> Option<String> {
    [
        format!("OTEL_EXPORTER_OTLP_TRACES_{name}"),
        format!("OTEL_EXPORTER_OTLP_{name}"),
    ]
    .iter()
    .find_map(|v| std::env::var(v).ok().filter(|v| !v.trim().is_empty()))
}

/// Whether the environment names the service (then it is not overridden).
fn service_named_by_env() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    set("OTEL_SERVICE_NAME")
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|attrs| {
            attrs
                .split(',')
                .any(|kv| kv.split('=').next().map(str::trim) == Some("service.name"))
        })
}

/// The exporter's HTTP client: `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` (milliseconds, default
/// 10 s), the system's roots plus the PEM file of `…CERTIFICATE`, and the client certificate of
/// `…CLIENT_CERTIFICATE` and `…CLIENT_KEY`.
fn http_client() -> Result<reqwest_otlp::blocking::Client, String> {
    // rustls on ring for every client that names no provider (reqwest's own would build C).
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let read = |var: &str, path: &str| {
        std::fs::read(path).map_err(|e| format!("OTEL_EXPORTER_OTLP_{var} {path}: {e}"))
    };
    let timeout = match otlp_var("TIMEOUT") {
        Some(ms) => Duration::from_millis(ms.trim().parse().map_err(|_| {
            format!("OTEL_EXPORTER_OTLP_TIMEOUT: expected milliseconds, found {ms:?}")
        })?),
        None => Duration::from_secs(10),
    };
    let mut builder = reqwest_otlp::blocking::Client::builder().timeout(timeout);
    if let Some(path) = otlp_var("CERTIFICATE") {
        let pem = read("CERTIFICATE", &path)?;
        let certs = reqwest_otlp::Certificate::from_pem_bundle(&pem)
            .map_err(|e| format!("OTEL_EXPORTER_OTLP_CERTIFICATE {path}: {e}"))?;
        for cert in certs {
            builder = builder.add_root_certificate(cert);
        }
    }
    match (otlp_var("CLIENT_CERTIFICATE"), otlp_var("CLIENT_KEY")) {
        (Some(cert), Some(key)) => {
            let mut pem = read("CLIENT_CERTIFICATE", &cert)?;
            pem.extend(read("CLIENT_KEY", &key)?);
            let identity = reqwest_otlp::Identity::from_pem(&pem)
                .map_err(|e| format!("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE {cert}: {e}"))?;
            builder = builder.identity(identity);
        }
        (None, None) => {}
        _ => {
            return Err(
                "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together"
                    .into(),
            );
        }
    }
    // A blocking client may not be built (or dropped) on an async runtime's thread.
    std::thread::spawn(move || builder.build())
        .join()
        .map_err(|_| "building the OTLP HTTP client failed".to_owned())?
        .map_err(|e| format!("cannot build the OTLP HTTP client: {e}"))
}

/// Makes `span` a child of the remote span named by `traceparent`.
pub(super) fn set_parent(span: &Span, traceparent: &str) {
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// The `traceparent` of `span` itself, when it is exported.
pub(super) fn traceparent_of(span: &Span) -> Option<String> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}
