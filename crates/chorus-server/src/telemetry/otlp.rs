//! The OTLP/HTTP (protobuf) span exporter and W3C trace-context propagation.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::{Span, Subscriber};
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt};
use tracing_subscriber::registry::LookupSpan;

/// A tracing layer exporting spans to the collector at `endpoint` (`/v1/traces` is added when
/// missing), and the provider to flush.
pub(super) fn layer<S>(
    endpoint: &str,
) -> Result<(OpenTelemetryLayer<S, SdkTracer>, SdkTracerProvider), String>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let base = endpoint.trim_end_matches('/');
    let url = if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    };
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url)
        .build()
        .map_err(|e| format!("cannot build the OTLP exporter for {endpoint}: {e}"))?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            Resource::builder()
                .with_service_name("chorus-server")
                .build(),
        )
        .build();
    let tracer = provider.tracer("chorus-server");
    Ok((tracing_opentelemetry::layer().with_tracer(tracer), provider))
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
