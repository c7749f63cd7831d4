//! Refusals as HTTP answers: a status, a stable code, a clear message and the issues found.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chorus_bus::BusError;
use chorus_core::Problem;
use serde::Serialize;
use utoipa::ToSchema;

/// One problem in a refused document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct IssueBody {
    /// JSON pointer of the offending value (`""` for the whole document).
    pub pointer: String,
    /// What was expected and what was found.
    pub message: String,
    /// How to fix a known common mistake.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl From<Problem> for IssueBody {
    fn from(i: Problem) -> IssueBody {
        IssueBody {
            pointer: i.pointer,
            message: i.message,
            hint: i.hint,
        }
    }
}

/// The JSON body of every refusal.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable, machine-readable code such as `invalid_message` or `forbidden`.
    pub error: String,
    /// What went wrong, for people.
    pub message: String,
    /// Every problem found in a refused document.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<IssueBody>,
    /// Where an invalid document was kept (dead letters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter_id: Option<String>,
}

/// A refused request.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body sent back.
    pub body: ErrorBody,
    /// Seconds to wait before retrying (sent as `Retry-After`).
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    /// A refusal with `status`, `code` and `message`.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: ErrorBody {
                error: code.to_owned(),
                message: message.into(),
                issues: Vec::new(),
                dead_letter_id: None,
            },
            retry_after_secs: None,
        }
    }

    /// 400: the request itself is malformed.
    pub fn bad_request(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 403: authenticated, but not allowed.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    /// 422: the document was read but is not a valid message or handoff.
    pub fn invalid(issues: Vec<Problem>, dead_letter_id: Option<String>) -> ApiError {
        let mut e = ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_message",
            format!(
                "the document was refused: {} problem(s), each with its JSON pointer",
                issues.len()
            ),
        );
        e.body.issues = issues.into_iter().map(IssueBody::from).collect();
        e.body.dead_letter_id = dead_letter_id;
        e
    }
}

impl From<BusError> for ApiError {
    fn from(e: BusError) -> ApiError {
        match e {
            BusError::Invalid {
                issues,
                dead_letter_id,
            } => ApiError::invalid(issues, Some(dead_letter_id)),
            BusError::StaleDelivery { .. } => {
                ApiError::new(StatusCode::CONFLICT, "stale_delivery", e.to_string())
            }
            // Without the digests the bus's message has: nothing of the stored content goes
            // back to a caller who may not have sent it.
            BusError::Conflict { id, .. } => ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!(
                    "message id {id:?} was already stored with other content; nothing was stored \
                     (hint: a retry must send the same document again; a new message needs a new id)"
                ),
            ),
            e if e.is_unavailable() => {
                // The store comes back by itself (a reconnect, free space): worth a retry soon.
                let mut refused = ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    e.to_string(),
                );
                refused.retry_after_secs = Some(1);
                refused
            }
            other => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                other.to_string(),
            ),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let unauthorized = self.status == StatusCode::UNAUTHORIZED;
        let mut response = (self.status, Json(self.body)).into_response();
        let headers = response.headers_mut();
        if unauthorized {
            headers.insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"chorus\""),
            );
        }
        if let Some(secs) = self.retry_after_secs {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}
