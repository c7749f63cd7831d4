//! Tracing across handoffs: the W3C trace context carried in stored messages, spans named
//! after the OpenTelemetry messaging conventions, the one tracing setup of `chorus serve` and
//! `chorus run` (logs, and with feature `otlp` an OTLP exporter).

#[cfg(feature = "otlp")]
mod otlp;
mod setup;
mod traces;

pub use setup::{LogFormat, Setup, Telemetry, init, init_with};
pub use traces::Traces;

use chorus_bus::Delivery;
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};
use tracing::Span;

/// `messaging.system` of every chorus span.
pub(crate) const SYSTEM: &str = "chorus";

/// Writes `traceparent` into a chorus message's metadata (`metadata.traceparent`, and
/// `metadata.trace_id` when the message has none); true when the document changed.
///
/// Handoff packets are left alone: their schema allows no other metadata keys.
pub(crate) fn stamp(document: &mut Value, traceparent: &str) -> bool {
    let Some(doc) = document.as_object_mut() else {
        return false;
    };
    if !doc.contains_key("role") {
        return false;
    }
    let meta = doc
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return false;
    };
    if meta.get("traceparent").and_then(Value::as_str) == Some(traceparent) {
        return false;
    }
    meta.insert("traceparent".into(), traceparent.into());
    if !meta.contains_key("trace_id")
        && let Some(trace_id) = traceparent.split('-').nth(1)
    {
        meta.insert("trace_id".into(), trace_id.into());
    }
    true
}

/// What a stored document says of its trace context: the `traceparent` in its metadata, and
/// whether it is a chorus message that [`stamp`] writes one into (a `role`, and metadata that is
/// an object or absent).
#[derive(Deserialize)]
struct Carrier {
    #[serde(default)]
    role: Option<IgnoredAny>,
    #[serde(default)]
    metadata: Option<CarrierMeta>,
}

#[derive(Deserialize)]
struct CarrierMeta {
    #[serde(default)]
    traceparent: Option<String>,
}

/// The trace context in a stored document's metadata, and whether the store may hold another
/// one for it (kept by message id: a handoff's, or a document [`stamp`] cannot write into).
fn carried(bytes: &[u8]) -> (Option<String>, bool) {
    match serde_json::from_slice::<Carrier>(bytes) {
        Ok(carrier) => {
            let stamped = carrier.role.is_some();
            let tp = carrier
                .metadata
                .and_then(|m| m.traceparent)
                .filter(|t| is_traceparent(t));
            (tp, !stamped)
        }
        Err(_) => (None, true),
    }
}

/// The trace a published document joins: the caller's `header`, else the document's
/// `metadata.traceparent`, else the latest trace kept for its `metadata.correlation_id`.
///
/// Known before the publish span is made, so that the span is born into that trace.
pub(crate) async fn joined(
    traces: &Traces,
    header: Option<String>,
    document: &Value,
) -> Option<String> {
    if header.is_some() {
        return header;
    }
    let text = |pointer: &str| document.pointer(pointer).and_then(Value::as_str);
    if let Some(tp) = text("/metadata/traceparent").filter(|t| is_traceparent(t)) {
        return Some(tp.to_ascii_lowercase());
    }
    traces
        .of_correlation(text("/metadata/correlation_id")?)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, "trace context of the correlation not read");
            None
        })
}

/// True when `value` has the W3C form `00-<32 hex>-<16 hex>-<2 hex>`.
pub(crate) fn is_traceparent(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    parts.len() == 4
        && hex(parts[0], 2)
        && hex(parts[1], 32)
        && hex(parts[2], 16)
        && hex(parts[3], 2)
}

/// Makes `span` a child of the remote span in `traceparent` (with the `otlp` feature).
pub(crate) fn link(span: &Span, traceparent: Option<&str>) {
    #[cfg(feature = "otlp")]
    if let Some(tp) = traceparent {
        otlp::set_parent(span, tp);
    }
    #[cfg(not(feature = "otlp"))]
    let _ = (span, traceparent);
}

/// The trace context to store with a message published under `span`: the span's own context
/// when spans are exported (feature `otlp`), else the caller's `traceparent`.
pub(crate) fn outgoing(span: &Span, incoming: Option<String>) -> Option<String> {
    #[cfg(feature = "otlp")]
    if let Some(own) = otlp::traceparent_of(span) {
        return Some(own);
    }
    #[cfg(not(feature = "otlp"))]
    let _ = span;
    incoming
}

/// The trace contexts of `deliveries`, in their order (see [`of_stored`]): those kept in
/// `traces` are looked up together.
pub(crate) async fn of_deliveries(traces: &Traces, deliveries: &[Delivery]) -> Vec<Option<String>> {
    // A chorus message carries in its metadata any trace context kept for it (the server
    // stamps it there on publish): only the others can have one kept by id in the store.
    let (mut found, kept_beside): (Vec<Option<String>>, Vec<bool>) = deliveries
        .iter()
        .map(|d| carried(&d.envelope.bytes))
        .unzip();
    let missing: Vec<usize> = (0..found.len())
        .filter(|&i| found[i].is_none() && kept_beside[i])
        .collect();
    if missing.is_empty() {
        return found;
    }
    let ids = missing
        .iter()
        .map(|&i| deliveries[i].envelope.id.clone())
        .collect();
    match traces.of_messages(ids).await {
        Ok(kept) => {
            for (i, tp) in missing.into_iter().zip(kept) {
                found[i] = tp;
            }
        }
        Err(e) => tracing::warn!(error = %e, "trace contexts of deliveries not read"),
    }
    found
}

/// The trace context of stored message `id`: the `traceparent` in its metadata (`bytes`), else
/// the one kept for its id in `traces` (a handoff's).
pub(crate) async fn of_stored(traces: &Traces, id: &str, bytes: &[u8]) -> Option<String> {
    let (tp, kept_beside) = carried(bytes);
    if tp.is_some() || !kept_beside {
        return tp;
    }
    traces.of_message(id).await.unwrap_or_else(|e| {
        tracing::warn!(message_id = %id, error = %e, "trace context not read");
        None
    })
}

/// A span for handing out (`deliver`, operation `receive`) or settling (`settle`, operation
/// `ack` or `nack`) delivery `d` of `agent`'s inbox, child of `traceparent` (see
/// [`of_delivery`]).
pub(crate) fn span_for(
    name: &'static str,
    operation: &'static str,
    agent: &str,
    d: &Delivery,
    traceparent: Option<&str>,
) -> Span {
    let kind = if name == "settle" {
        "settle"
    } else {
        "receive"
    };
    let span = tracing::info_span!(
        "chorus",
        otel.name = name,
        otel.kind = "consumer",
        messaging.system = SYSTEM,
        messaging.operation.type = kind,
        messaging.operation.name = operation,
        messaging.destination.name = %agent,
        messaging.message.id = %d.envelope.id,
        messaging.message.delivery_count = d.attempt,
    );
    link(&span, traceparent);
    span
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn stamps_messages_and_leaves_handoffs() {
        let mut msg = json!({"role": "user", "content": "hi"});
        assert!(stamp(&mut msg, TP));
        assert_eq!(msg["metadata"]["traceparent"], TP);
        assert_eq!(
            msg["metadata"]["trace_id"],
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(!stamp(&mut msg, TP), "stamping again changes nothing");
        let mut own = json!({"role": "user", "metadata": {"trace_id": "langsmith-1"}});
        assert!(stamp(&mut own, TP));
        assert_eq!(
            own["metadata"]["trace_id"], "langsmith-1",
            "an existing trace id stays"
        );
        let mut handoff = json!({"metadata": {"message_id": "h1"}});
        assert!(!stamp(&mut handoff, TP));
        assert!(handoff["metadata"].get("traceparent").is_none());
    }

    #[test]
    fn reads_the_stored_traceparent() {
        let doc = json!({"role": "user", "metadata": {"traceparent": TP, "session_id": "s"}});
        assert_eq!(
            carried(&serde_json::to_vec(&doc).unwrap()).0.as_deref(),
            Some(TP)
        );
        let bad = json!({"metadata": {"traceparent": "00-zz-01"}});
        assert_eq!(carried(&serde_json::to_vec(&bad).unwrap()).0, None);
        assert_eq!(carried(b"not json").0, None);
        assert!(is_traceparent(TP));
    }

    #[test]
    fn only_documents_stamp_cannot_write_into_are_looked_up_beside() {
        // Whatever `stamp` accepts carries its trace context in its own bytes afterwards, so
        // a delivery of it never needs the store; everything else may have one kept by id.
        for doc in [
            json!({"role": "user", "content": "hi"}),
            json!({"role": "assistant", "metadata": {"session_id": "s"}, "content": null}),
            json!({"metadata": {"message_id": "h1"}, "payload": {}}),
            json!({"role": "user", "metadata": "not an object"}),
            json!(["an", "array"]),
        ] {
            let before = carried(&serde_json::to_vec(&doc).unwrap());
            let mut stamped = doc.clone();
            let took = stamp(&mut stamped, TP);
            assert_eq!(before, (None, !took), "{doc}");
            let after = carried(&serde_json::to_vec(&stamped).unwrap());
            let expected = if took { Some(TP.to_owned()) } else { None };
            assert_eq!(after, (expected, !took), "{stamped}");
        }
        assert_eq!(carried(b"not json"), (None, true));
    }
}
