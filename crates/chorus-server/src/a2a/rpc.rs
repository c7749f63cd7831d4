//! JSON-RPC 2.0 as A2A v1.0 binds it (the request envelope, results, error objects) and the A2A
//! errors: their JSON-RPC codes, HTTP statuses and reasons (`google.rpc.ErrorInfo`).

use chorus_core::Problem;
use serde_json::{Value, json};

/// The JSON-RPC code of a request that is not valid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON-RPC code of a request that is not a JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// The JSON-RPC code of an unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The JSON-RPC code of parameters that are not what the method takes.
pub const INVALID_PARAMS: i64 = -32602;
/// The JSON-RPC code of a failure inside the server.
pub const INTERNAL_ERROR: i64 = -32603;
/// The JSON-RPC server-error code chorus answers when an operation took longer than the
/// server's request timeout (HTTP 503 in the HTTP+JSON binding).
pub const TIMED_OUT: i64 = -32000;
/// A2A `TaskNotFoundError`.
pub const TASK_NOT_FOUND: i64 = -32001;
/// A2A `TaskNotCancelableError`.
pub const TASK_NOT_CANCELABLE: i64 = -32002;
/// A2A `PushNotificationNotSupportedError`.
pub const PUSH_NOT_SUPPORTED: i64 = -32003;
/// A2A `UnsupportedOperationError`.
pub const UNSUPPORTED_OPERATION: i64 = -32004;
/// A2A `ExtendedAgentCardNotConfiguredError`.
pub const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
/// A2A `VersionNotSupportedError`.
pub const VERSION_NOT_SUPPORTED: i64 = -32009;

/// The HTTP status, its `google.rpc.Code` name and the A2A reason of a JSON-RPC error code.
fn mapping(code: i64) -> (u16, &'static str, &'static str) {
    match code {
        TASK_NOT_FOUND => (404, "NOT_FOUND", "TASK_NOT_FOUND"),
        TASK_NOT_CANCELABLE => (400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
        PUSH_NOT_SUPPORTED => (
            400,
            "FAILED_PRECONDITION",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        UNSUPPORTED_OPERATION => (400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
        EXTENDED_CARD_NOT_CONFIGURED => (
            400,
            "FAILED_PRECONDITION",
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        ),
        VERSION_NOT_SUPPORTED => (400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
        INVALID_PARAMS => (400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
        INVALID_REQUEST | PARSE_ERROR => (400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
        METHOD_NOT_FOUND => (404, "NOT_FOUND", "METHOD_NOT_FOUND"),
        TIMED_OUT => (503, "UNAVAILABLE", "TIMED_OUT"),
        _ => (500, "INTERNAL", "INTERNAL_ERROR"),
    }
}

/// A refusal: a JSON-RPC error object with the problems found (pointer, expected/found, hint).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// What went wrong, for people.
    pub message: String,
    /// The problems, each at its JSON pointer into the request's `params`.
    pub issues: Vec<Problem>,
    /// For a refusal of the chorus API behind the call (policy, conflict, rate, …): its HTTP
    /// status, `google.rpc.Code` name and reason, which the code alone does not tell apart.
    pub api: Option<ApiRefusal>,
}

/// How the chorus API refused the publish behind a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiRefusal {
    /// Its HTTP status (403, 409, 429, …).
    pub http: u16,
    /// The `google.rpc.Code` name of that status.
    pub status: &'static str,
    /// The reason in the error's `google.rpc.ErrorInfo`.
    pub reason: &'static str,
}

impl ApiRefusal {
    /// The refusal for an HTTP status the code mapping does not tell (`None` for the others:
    /// 400 and 422 are the `INVALID_PARAMS` they look like, 5xx an internal error).
    pub fn of_status(http: u16) -> Option<ApiRefusal> {
        let (status, reason) = match http {
            401 => ("UNAUTHENTICATED", "UNAUTHENTICATED"),
            403 => ("PERMISSION_DENIED", "PERMISSION_DENIED"),
            404 => ("NOT_FOUND", "RECIPIENT_NOT_FOUND"),
            409 => ("ALREADY_EXISTS", "CONFLICT"),
            413 => ("INVALID_ARGUMENT", "TOO_LARGE"),
            429 => ("RESOURCE_EXHAUSTED", "RATE_LIMITED"),
            503 => ("UNAVAILABLE", "UNAVAILABLE"),
            _ => return None,
        };
        Some(ApiRefusal {
            http,
            status,
            reason,
        })
    }
}

impl RpcError {
    /// An error with `code` and `message`, no problems listed.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            issues: Vec::new(),
            api: None,
        }
    }

    /// Invalid parameters, with the problem found.
    pub fn params(problem: Problem) -> RpcError {
        RpcError {
            code: INVALID_PARAMS,
            message: format!("invalid parameters: {problem}"),
            issues: vec![problem],
            api: None,
        }
    }

    /// The HTTP status of this error in the HTTP+JSON binding.
    pub fn http_status(&self) -> u16 {
        self.api.map_or(mapping(self.code).0, |a| a.http)
    }

    /// The HTTP status, `google.rpc.Code` name and reason of this error.
    fn mapped(&self) -> (u16, &'static str, &'static str) {
        self.api
            .map_or(mapping(self.code), |a| (a.http, a.status, a.reason))
    }

    /// The error details: the A2A reason (`google.rpc.ErrorInfo`) and, when there are problems,
    /// a `google.rpc.BadRequest` with one field violation per problem (its JSON pointer; the
    /// hint, when there is one, ends the description).
    fn details(&self) -> Vec<Value> {
        let mut details = vec![json!({"@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.mapped().2, "domain": self.domain()})];
        if !self.issues.is_empty() {
            let violations: Vec<Value> = self
                .issues
                .iter()
                .map(|p| {
                    let description = match &p.hint {
                        Some(hint) => format!("{}; hint: {hint}", p.message),
                        None => p.message.clone(),
                    };
                    json!({"field": p.pointer, "description": description})
                })
                .collect();
            details.push(json!({"@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": violations}));
        }
        details
    }

    /// The domain of the reason: A2A's own, or chorus's for a refusal of its API.
    fn domain(&self) -> &'static str {
        match self.api {
            Some(_) => "chorus",
            None => "a2a-protocol.org",
        }
    }

    /// The JSON-RPC error object (`data`: the details).
    pub fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message, "data": self.details()})
    }

    /// The `google.rpc.Status` object of the HTTP+JSON binding.
    pub fn to_status(&self) -> Value {
        let (http, status, _) = self.mapped();
        json!({"code": http, "status": status, "message": self.message, "details": self.details()})
    }
}

/// A parsed JSON-RPC request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id (a string, a number or null), echoed in the answer.
    pub id: Value,
    /// The method name, e.g. `SendMessage`.
    pub method: String,
    /// The parameters (an empty object when absent).
    pub params: Value,
}

/// A refused request: the id when one was readable, and the error.
pub type Refused = Box<(Value, RpcError)>;

/// Reads a JSON-RPC request from a body; the refusal carries the id when one was readable.
pub fn parse(body: &[u8]) -> Result<Request, Refused> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        Box::new((
            Value::Null,
            RpcError::new(PARSE_ERROR, format!("the body is not JSON: {e}")),
        ))
    })?;
    let Value::Object(map) = value else {
        return Err(Box::new((
            Value::Null,
            RpcError::new(INVALID_REQUEST, "expected a JSON-RPC request object"),
        )));
    };
    let id = map.get("id").cloned().unwrap_or(Value::Null);
    let invalid = |problem: Problem| -> Refused {
        Box::new((
            id.clone(),
            RpcError {
                code: INVALID_REQUEST,
                message: format!("not a JSON-RPC 2.0 request: {problem}"),
                issues: vec![problem],
                api: None,
            },
        ))
    };
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return Err(invalid(Problem::expected(
            "/id",
            "a string, a number or null",
            describe(&id),
        )));
    }
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(
            Problem::expected(
                "/jsonrpc",
                "\"2.0\"",
                map.get("jsonrpc").map_or("nothing".into(), describe),
            )
            .with_hint("every request says \"jsonrpc\": \"2.0\""),
        ));
    }
    let method = match map.get("method") {
        Some(Value::String(m)) => m.clone(),
        other => {
            return Err(invalid(Problem::expected(
                "/method",
                "a method name such as \"SendMessage\"",
                other.map_or("nothing".into(), describe),
            )));
        }
    };
    let mut params = match map.get("params") {
        None | Some(Value::Null) => json!({}),
        Some(p @ Value::Object(_)) => p.clone(),
        Some(other) => {
            return Err(invalid(Problem::expected(
                "/params",
                "an object",
                describe(other),
            )));
        }
    };
    super::spelling::json_names(&mut params)
        .map_err(|problem| Box::new((id.clone(), RpcError::params(problem))))?;
    Ok(Request { id, method, params })
}

/// The answer carrying `result`.
pub fn result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The answer carrying `error`.
pub fn error(id: &Value, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})
}

/// A short description of a JSON value, for "found" in a problem.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_and_refusals_name_the_pointer() {
        let ok =
            parse(br#"{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"t"}}"#).unwrap();
        assert_eq!((ok.id, ok.method.as_str()), (json!(7), "GetTask"));
        let (id, err) = *parse(br#"{"jsonrpc":"1.0","id":"a","method":"GetTask"}"#).unwrap_err();
        assert_eq!((id, err.code), (json!("a"), INVALID_REQUEST));
        assert_eq!(err.issues[0].pointer, "/jsonrpc");
        assert_eq!(parse(b"{").unwrap_err().1.code, PARSE_ERROR);
        let (_, err) =
            *parse(br#"{"jsonrpc":"2.0","id":1,"method":"X","params":[1]}"#).unwrap_err();
        assert_eq!(err.issues[0].pointer, "/params");
    }
}
