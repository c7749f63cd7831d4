//! The A2A version a request asks for (`A2A-Version`). chorus speaks A2A 1.0: a request naming
//! another major version is refused with `VersionNotSupportedError`, in its binding's shape.
//!
//! A request without the header is served as 1.0. The specification reads a missing header as
//! 0.3, which chorus does not speak, so reading it strictly would refuse every client of 1.0
//! that leaves the header out (curl, hand-written clients); a 0.3 client's messages are refused
//! anyway by what they hold (`kind` parts, lower-case roles), with a pointer to each.

use axum::Json;
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::rpc::{self, RpcError};

/// The header a client names its A2A version in.
const HEADER: &str = "A2A-Version";

/// The version chorus speaks.
const SPOKEN: &str = "1.0";

/// Refuses, at a JSON-RPC endpoint, a request whose `A2A-Version` names a major version other
/// than 1, with a JSON-RPC error (its id is unknown before the body is read: null), before its
/// handler runs.
pub(super) async fn json_rpc(request: Request, next: Next) -> Response {
    match supported(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => Json(rpc::error(&Value::Null, &e)).into_response(),
    }
}

/// The same at an HTTP+JSON endpoint: a `google.rpc.Status` with its HTTP status (400).
pub(super) async fn http_json(request: Request, next: Next) -> Response {
    match supported(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => super::rest::refused(&e),
    }
}

/// `Ok` for a request without the header or with a 1.x version.
fn supported(headers: &HeaderMap) -> Result<(), RpcError> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(());
    };
    let asked = value.to_str().unwrap_or("").trim();
    if asked.is_empty() {
        return Ok(());
    }
    let major = asked.split('.').next().and_then(|m| m.parse::<u32>().ok());
    if major == Some(1) {
        return Ok(());
    }
    Err(RpcError::new(
        rpc::VERSION_NOT_SUPPORTED,
        format!(
            "A2A version {asked:?} is not supported: this server speaks A2A {SPOKEN} (send \
             `{HEADER}: {SPOKEN}`, or no {HEADER} header)"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking(version: Option<&str>) -> Result<(), i64> {
        let mut headers = HeaderMap::new();
        if let Some(v) = version {
            headers.insert(HEADER, v.parse().unwrap());
        }
        supported(&headers).map_err(|e| e.code)
    }

    #[test]
    fn major_version_one_or_none_is_served_and_others_refused() {
        for fine in [
            None,
            Some(""),
            Some("1.0"),
            Some("1"),
            Some(" 1.0.2 "),
            Some("1.1"),
        ] {
            assert_eq!(asking(fine), Ok(()), "{fine:?}");
        }
        for refused in ["0.3", "99.0", "2.0", "one", "v1"] {
            assert_eq!(
                asking(Some(refused)),
                Err(rpc::VERSION_NOT_SUPPORTED),
                "{refused}"
            );
        }
    }
}
