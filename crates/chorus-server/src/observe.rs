//! Logs of what the server does, keyed by message, correlation and W3C trace ids; message
//! contents are never logged.

use axum::http::HeaderMap;
use tracing_subscriber::EnvFilter;

/// The `traceparent` header when it has the W3C form `00-<32 hex>-<16 hex>-<2 hex>`.
pub fn traceparent(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("traceparent")?.to_str().ok()?;
    let parts: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    let ok = parts.len() == 4
        && hex(parts[0], 2)
        && hex(parts[1], 32)
        && hex(parts[2], 16)
        && hex(parts[3], 2);
    ok.then(|| value.to_ascii_lowercase())
}

/// Logs to standard error, filtered by `CHORUS_LOG` (default `info`); does nothing when a
/// logger is already installed.
pub fn init_logging() {
    let filter = EnvFilter::try_from_env("CHORUS_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
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
