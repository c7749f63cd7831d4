//! Errors in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`, with the HTTP
//! status that says what happened (never a 200 carrying an error).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chorus_core::Problem;
use serde_json::{Value, json};

/// A request the gateway answers with an error.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
    /// OpenAI's error type (`invalid_request_error`, `upstream_error`, ...).
    pub kind: &'static str,
    /// The request field at fault, as a JSON pointer (`/messages/2/content`).
    pub param: Option<String>,
    /// A short machine-readable code.
    pub code: &'static str,
    /// More fields for the error object (the upstream's raw text).
    pub extra: Option<Box<Value>>,
    /// Seconds to wait before trying again (`Retry-After`).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// A 400 about the request field at `param`.
    pub fn invalid(
        param: impl Into<String>,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some(param.into()),
            code,
            extra: None,
            retry_after: None,
        }
    }

    /// A 400 for a field or value the gateway does not carry to gpt-oss, saying why.
    pub fn unsupported(param: impl Into<String>, why: impl Into<String>) -> Self {
        Self::invalid(param, "unsupported_parameter", why)
    }

    /// A 400 from a problem found in the request (its pointer under `prefix`).
    pub fn from_problem(prefix: &str, problem: &Problem) -> Self {
        let mut message = problem.message.clone();
        if let Some(hint) = &problem.hint {
            message.push_str(&format!(" (hint: {hint})"));
        }
        Self::invalid(
            format!("{prefix}{}", problem.pointer),
            "invalid_value",
            message,
        )
    }

    /// A 502: the upstream failed or answered something that cannot be read; `raw` is what it
    /// sent, attached to the error.
    pub fn upstream(code: &'static str, message: impl Into<String>, raw: Option<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_GATEWAY,
            message: message.into(),
            kind: "upstream_error",
            param: None,
            code,
            extra: raw.map(|raw| Box::new(json!({"raw": raw}))),
            retry_after: None,
        }
    }

    /// Any other status, without a field at fault.
    pub fn status(
        status: StatusCode,
        kind: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            message: message.into(),
            kind,
            param: None,
            code,
            extra: None,
            retry_after: None,
        }
    }

    /// The error object (inside `{"error": ...}`).
    pub fn body(&self) -> Value {
        let mut error = json!({
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        });
        if let (Some(Value::Object(extra)), Some(map)) =
            (self.extra.as_deref(), error.as_object_mut())
        {
            map.extend(extra.clone());
        }
        json!({ "error": error })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(wait) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(wait));
        }
        response
    }
}
