//! MCP (Model Context Protocol) at `/mcp`, over streamable HTTP (feature `mcp`): an MCP-capable
//! assistant publishes and reads handoffs with an agent's bearer token. Every tool goes through
//! the same code as the HTTP API — the publish checks (sender, policy, schema, rate), the inbox
//! policy, a task's parties — so MCP adds a door, not a way around them.
//!
//! Stateless (no MCP session is kept between requests) and answered as JSON; every request needs
//! a known bearer token, checked before rmcp sees it (so rmcp's Host allow-list, meant for
//! unauthenticated local servers, is off: the hub is reached under its own host names). A
//! request with an `Origin` (a browser's) is refused 403 unless that origin is the hub's own
//! (its `Host`) or one `[cors] allow_origins` lists: MCP's protection against DNS rebinding.
//! `logging/setLevel` is accepted; the hub sends no log notifications (it keeps no stream open).

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
// Logging is deprecated by the current MCP revision (SEP-2577), but clients at 2025-11-25 still
// call `logging/setLevel` (the conformance suite's `logging-set-level` scenario does).
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::api::extract::{ApiPath, ApiQuery};
use crate::api::peek::{PeekOptions, inbox_messages};
use crate::api::publish::{publish_body, publisher};
use crate::auth::Caller;
use crate::config::CorsConfig;
use crate::error::ApiError;
use crate::state::AppState;

/// The `/mcp` route: the MCP endpoint behind the origin and bearer-token checks; `cors` lists
/// the other origins browsers may call it from.
pub fn routes(app: AppState, cors: &CorsConfig) -> Router<AppState> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(app.max_body_bytes)
        .disable_allowed_hosts();
    let tools = HubTools { app: app.clone() };
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let router = Router::new().nest_service("/mcp", service);
    // Every answer is JSON at once (no stream is kept): under the request timeout.
    let router = match app.request_timeout {
        Some(limit) => router.layer(crate::layers::timeout(limit)),
        None => router,
    };
    let origins = Arc::new(cors.allow_origins.clone());
    router
        .layer(middleware::from_fn_with_state(app, authenticated))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let origins = origins.clone();
            async move {
                match foreign_origin(&request, &origins) {
                    Some(origin) => ApiError::new(
                        axum::http::StatusCode::FORBIDDEN,
                        "origin_not_allowed",
                        format!(
                            "requests from the origin {origin:?} are refused (DNS rebinding \
                             protection); list it in [cors] allow_origins to allow it"
                        ),
                    )
                    .into_response(),
                    None => next.run(request).await,
                }
            }
        }))
}

/// The request's `Origin` when it is neither the hub's own (the origin's host and port are the
/// request's `Host`) nor listed (`*` lists every origin).
fn foreign_origin(request: &Request, listed: &[String]) -> Option<String> {
    let origin = request.headers().get(axum::http::header::ORIGIN)?;
    let origin = origin.to_str().unwrap_or("(not text)").to_owned();
    if listed.iter().any(|o| o == "*" || *o == origin) {
        return None;
    }
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok());
    let authority = origin.split_once("://").map(|(_, rest)| rest);
    match (authority, host) {
        (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host) => None,
        _ => Some(origin),
    }
}

/// Refuses a request without a known bearer token (401, as the API does); else hands it on
/// with its [`Caller`] as an extension, for the tools.
async fn authenticated(State(app): State<AppState>, mut request: Request, next: Next) -> Response {
    let header = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match app.tokens.caller(header) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            // Read here, so that a body too large or too late is refused as on every route
            // (413, 408), not as the MCP service's own failure to read it (500).
            let (parts, body) = request.into_parts();
            let bytes = match axum::body::to_bytes(body, app.max_body_bytes).await {
                Ok(bytes) => bytes,
                Err(e) => return unread(&e, app.max_body_bytes).into_response(),
            };
            // A duplicate key (in a tool's arguments too) is refused as `POST /v1/messages`
            // refuses it; the MCP service would read it with the last key winning.
            if !bytes.is_empty()
                && let Err(e) = crate::api::publish::parse_json(&bytes)
                && e.body.error == "invalid_message"
            {
                return e.into_response();
            }
            next.run(Request::from_parts(parts, bytes.into())).await
        }
        Err(e) => e.into_response(),
    }
}

/// The refusal of a body that could not be read: late (408), too large (413), cut short (400).
fn unread(e: &axum::Error, limit: usize) -> ApiError {
    use std::error::Error;
    if let Some(t) = crate::body_edge::timed_out(e) {
        return crate::body_edge::late(t);
    }
    let mut cause: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if c.is::<http_body_util::LengthLimitError>() {
            return crate::body_edge::too_large_read(limit);
        }
        cause = c.source();
    }
    ApiError::bad_request(
        "unreadable_body",
        format!("the request body could not be read: {e}"),
    )
}

/// The MCP server: the hub's tools for the caller of each request.
#[derive(Clone)]
struct HubTools {
    app: AppState,
}

/// The caller the middleware found for this request.
fn caller_of(context: &RequestContext<RoleServer>) -> Result<Caller, ErrorData> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .cloned()
        .ok_or_else(|| ErrorData::invalid_request("no authenticated caller", None))
}

/// A JSON Schema object (a tool's input).
fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The tools, with their input schemas.
fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "publish",
            "Publish a chorus message or seed-003 handoff packet as the calling agent (the \
             token's). The same checks as POST /v1/messages: the sender must be the caller, the \
             recipient one it may send to, the document valid. Returns the receipt (id, queues, \
             duplicate) or the refusal with each problem's JSON pointer.",
            schema(json!({
                "type": "object",
                "properties": {"document": {"type": "object",
                    "description": "The chorus message or handoff packet, as POST /v1/messages takes it"}},
                "required": ["document"],
            })),
        ),
        Tool::new(
            "read_inbox",
            "Look at the messages waiting in an inbox the caller may read (its own, or its \
             pool's), without taking them: no delivery attempt is counted, nothing is held. \
             Returns the depth and the first `limit` messages with their delivery state.",
            schema(json!({
                "type": "object",
                "properties": {
                    "inbox": {"type": "string", "description": "The agent or pool id"},
                    "limit": {"type": "integer", "minimum": 0, "maximum": 1000,
                        "description": "At most this many messages (default 100)"},
                },
                "required": ["inbox"],
            })),
        ),
        Tool::new(
            "read_task",
            "Read a task the caller is a party to (it sent the task's first message, or may read \
             an inbox that message went to): its state as A2A names it (submitted, working, \
             input-required, completed, failed, canceled, rejected) and its messages, handoffs \
             whole.",
            schema(json!({
                "type": "object",
                "properties": {
                    "task_id": {"type": "string"},
                    "history_length": {"type": "integer", "minimum": 0,
                        "description": "Only the latest this many messages"},
                },
                "required": ["task_id"],
            })),
        ),
    ]
}

/// A refusal of the API as a tool error: its status and body (error, message, issues).
fn refused(e: ApiError) -> CallToolResult {
    CallToolResult::structured_error(json!({"status": e.status.as_u16(), "refusal": e.body}))
}

/// A tool error for arguments that are not what the tool takes.
fn bad_arguments(message: String) -> CallToolResult {
    CallToolResult::structured_error(json!({"status": 400, "refusal": {
        "error": "bad_arguments", "message": message}}))
}

/// The optional non-negative integer argument `name` (else why not, for [`bad_arguments`]).
fn count(args: &JsonObject, name: &str) -> Result<Option<usize>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| format!("`{name}` must be a non-negative integer, found {v}")),
    }
}

impl HubTools {
    async fn publish(&self, caller: Caller, args: &JsonObject) -> CallToolResult {
        let Some(document @ Value::Object(_)) = args.get("document") else {
            return bad_arguments("`document` must be the JSON object to publish".into());
        };
        let agent = match publisher(caller) {
            Ok(agent) => agent,
            Err(e) => return refused(e),
        };
        let bytes = match serde_json::to_vec(document) {
            Ok(bytes) => Bytes::from(bytes),
            Err(e) => return bad_arguments(e.to_string()),
        };
        match publish_body(&self.app, &agent, None, Ok(bytes)).await {
            Ok((status, receipt)) => {
                CallToolResult::structured(json!({"status": status.as_u16(), "receipt": receipt.0}))
            }
            Err(e) => refused(e),
        }
    }

    async fn read_inbox(&self, caller: Caller, args: &JsonObject) -> CallToolResult {
        let Some(Value::String(inbox)) = args.get("inbox") else {
            return bad_arguments("`inbox` must be the agent or pool id".into());
        };
        let limit = match count(args, "limit") {
            Ok(limit) => limit,
            Err(why) => return bad_arguments(why),
        };
        let read = inbox_messages(
            State(self.app.clone()),
            caller,
            ApiPath(inbox.clone()),
            ApiQuery(PeekOptions { limit }),
        )
        .await;
        match read.map(|json| serde_json::to_value(json.0)) {
            Ok(Ok(value)) => CallToolResult::structured(value),
            Ok(Err(e)) => bad_arguments(e.to_string()),
            Err(e) => refused(e),
        }
    }

    async fn read_task(&self, caller: Caller, args: &JsonObject) -> CallToolResult {
        let Some(Value::String(task)) = args.get("task_id") else {
            return bad_arguments("`task_id` must be the task id".into());
        };
        let history = match count(args, "history_length") {
            Ok(history) => history,
            Err(why) => return bad_arguments(why),
        };
        match crate::a2a::task_json(&self.app, &caller, task, history).await {
            Ok(task) => CallToolResult::structured(task),
            Err((status, message)) => CallToolResult::structured_error(json!({
                "status": status, "refusal": {"error": "not_found", "message": message}})),
        }
    }
}

impl ServerHandler for HubTools {
    #[allow(deprecated)] // enable_logging: see SetLevelRequestParams above.
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("chorus", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "The chorus hub: publish messages and handoffs as your agent, look at an inbox, \
                 read a task.",
        )
    }

    /// Accepted: the hub emits no log notifications at any level (each answer is one JSON
    /// body, no stream stays open to carry them).
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller_of(&context)?;
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "publish" => self.publish(caller, &args).await,
            "read_inbox" => self.read_inbox(caller, &args).await,
            "read_task" => self.read_task(caller, &args).await,
            other => {
                return Err(ErrorData::invalid_params(
                    format!("no tool {other:?}; the tools are publish, read_inbox and read_task"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}
