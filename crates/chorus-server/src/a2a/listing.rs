//! `ListTasks`: the tasks a caller may see, most recently active first, filtered by context,
//! state and activity time, a page at a time.
//!
//! The store lists every task of the hub by activity; whether the caller is a party of one is
//! known only from its first message, so each listing reads the [`SCANNED`] most recently
//! active tasks, keeps those the caller may see (and, at an agent's endpoint, those opened to
//! that agent), and pages through what it kept. A page token is the position in that list, so
//! `totalSize` is the same on every page; a task active between two calls can move up the list.

use chorus_core::Problem;
use serde_json::{Value, json};

use super::operations::{history_length, load};
use super::rpc::{self, RpcError};
use crate::auth::Caller;
use crate::state::AppState;

/// The most recently active tasks a listing looks at.
pub(super) const SCANNED: usize = 2_000;

/// The page size when the request names none, and the largest one taken (A2A's bounds).
const DEFAULT_PAGE: usize = 50;
const MAX_PAGE: usize = 100;

/// Tasks read from the store a call.
const STORE_PAGE: usize = 200;

/// What a `ListTasks` request asks for.
struct Wanted {
    context_id: Option<String>,
    state: Option<String>,
    active_since_ms: Option<i64>,
    page_size: usize,
    offset: usize,
    history: Option<usize>,
}

/// `ListTasks` at the endpoint of `inbox` (`None`: the hub's): a `ListTasksResponse`.
pub(super) async fn list(
    app: &AppState,
    caller: &Caller,
    inbox: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let wanted = read(params)?;
    let mut kept = Vec::new();
    let mut after: Option<String> = None;
    let mut scanned = 0;
    'pages: while scanned < SCANNED {
        let page = app
            .bus
            .tasks_page(after.as_deref(), STORE_PAGE)
            .await
            .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, e.to_string()))?;
        for summary in &page.items {
            scanned += 1;
            if scanned > SCANNED {
                break 'pages;
            }
            if wanted.active_since_ms.is_some_and(|t| summary.last_ms < t) {
                continue;
            }
            let view = match load(app, caller, &summary.id).await {
                Ok(view) => view,
                Err(e) if e.code == rpc::TASK_NOT_FOUND => continue,
                Err(e) => return Err(e),
            };
            let fits = inbox.is_none_or(|name| view.opened_to.iter().any(|r| r == name))
                && wanted
                    .context_id
                    .as_ref()
                    .is_none_or(|c| *c == view.context_id)
                && wanted
                    .state
                    .as_ref()
                    .is_none_or(|s| s == view.state.as_str());
            if fits {
                kept.push(view);
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let total = kept.len();
    let tasks: Vec<Value> = kept
        .iter()
        .skip(wanted.offset)
        .take(wanted.page_size)
        .map(|view| view.to_json(wanted.history))
        .collect();
    let end = wanted.offset + tasks.len();
    let next = if end < total {
        end.to_string()
    } else {
        String::new()
    };
    Ok(json!({
        "tasks": tasks,
        "nextPageToken": next,
        "pageSize": wanted.page_size,
        "totalSize": total,
    }))
}

/// The request's filters and page, each checked at its pointer.
fn read(params: &Value) -> Result<Wanted, RpcError> {
    let text = |key: &str| -> Result<Option<String>, RpcError> {
        match params.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(invalid(key, "a string", other)),
        }
    };
    let state = text("status")?;
    if let Some(state) = &state
        && !state.starts_with("TASK_STATE_")
    {
        return Err(invalid(
            "status",
            "a TaskState such as \"TASK_STATE_WORKING\"",
            &json!(state),
        ));
    }
    let active_since_ms = match text("statusTimestampAfter")? {
        None => None,
        Some(t) => Some(
            chrono::DateTime::parse_from_rfc3339(&t)
                .map_err(|_| {
                    invalid(
                        "statusTimestampAfter",
                        "an RFC 3339 time such as \"2026-01-01T00:00:00Z\"",
                        &json!(t),
                    )
                })?
                .timestamp_millis(),
        ),
    };
    let page_size = match params.get("pageSize") {
        None | Some(Value::Null) => DEFAULT_PAGE,
        Some(v) => match v.as_u64() {
            Some(n @ 1..) if n as usize <= MAX_PAGE => n as usize,
            _ => return Err(invalid("pageSize", "a whole number from 1 to 100", v)),
        },
    };
    let offset = match text("pageToken")? {
        None => 0,
        Some(token) => token.parse().map_err(|_| {
            invalid(
                "pageToken",
                "the nextPageToken of an earlier ListTasks",
                &json!(token),
            )
        })?,
    };
    Ok(Wanted {
        context_id: text("contextId")?,
        state,
        active_since_ms,
        page_size,
        offset,
        history: history_length(params, "/historyLength")?,
    })
}

fn invalid(key: &str, expected: &str, found: &Value) -> RpcError {
    RpcError::params(Problem::expected(
        format!("/{key}"),
        expected,
        rpc::describe(found),
    ))
}
