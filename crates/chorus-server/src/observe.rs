//! Logs of what the server does, keyed by message, correlation and W3C trace ids; message
//! contents are never logged (the subscriber is installed by [`crate::telemetry::init`]).

use axum::http::HeaderMap;

/// The `traceparent` header when it has the W3C form `00-<32 hex>-<16 hex>-<2 hex>`.
pub fn traceparent(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("traceparent")?.to_str().ok()?;
    let ok = crate::telemetry::is_traceparent(value);
    ok.then(|| value.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_w3c_traceparents() {
        let mut headers = HeaderMap::new();
        let good = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
        headers.insert("traceparent", good.parse().unwrap());
        assert_eq!(traceparent(&headers).unwrap(), good.to_ascii_lowercase());
        for bad in ["00-xyz-00f067aa0ba902b7-01", "00-4bf9-01", "garbage"] {
            headers.insert("traceparent", bad.parse().unwrap());
            assert_eq!(traceparent(&headers), None, "{bad}");
        }
    }
}
