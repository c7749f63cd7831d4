//! The JSON-RPC binding: one endpoint, the method named in the request, every answer a JSON-RPC
//! result or error (streams: one per event).

use axum::Json;
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::in_time;
use super::listing::list;
use super::operations::{cancel, get, publish, send, subscribable};
use super::rpc::{self, RpcError};
use super::stream::{Framing, open_stream, stream_task};
use crate::auth::Caller;
use crate::state::AppState;

/// Answers one JSON-RPC request of `caller` at the endpoint of `inbox` (`None`: the hub's).
pub async fn answer(app: AppState, caller: Caller, inbox: Option<String>, body: Bytes) -> Response {
    let request = match rpc::parse(&body) {
        Ok(r) => r,
        Err(refused) => {
            let (id, e) = *refused;
            return Json(rpc::error(&id, &e)).into_response();
        }
    };
    let id = request.id.clone();
    let params = &request.params;
    let outcome = match request.method.as_str() {
        "SendMessage" => in_time(&app, send(&app, &caller, inbox.as_deref(), params))
            .await
            .map(|task| json!({"task": task})),
        "SendStreamingMessage" => {
            let opened = async {
                let ticket = open_stream(&app, &caller)?;
                let task_id = publish(&app, &caller, inbox.as_deref(), params).await?;
                Ok((task_id, ticket))
            };
            return match in_time(&app, opened).await {
                Ok((task_id, ticket)) => {
                    stream_task(app, caller, task_id, Framing::JsonRpc(id), ticket).into_response()
                }
                Err(e) => Json(rpc::error(&id, &e)).into_response(),
            };
        }
        "SubscribeToTask" => {
            let opened = async {
                let ticket = open_stream(&app, &caller)?;
                Ok((subscribable(&app, &caller, params).await?, ticket))
            };
            return match in_time(&app, opened).await {
                Ok((task_id, ticket)) => {
                    stream_task(app, caller, task_id, Framing::JsonRpc(id), ticket).into_response()
                }
                Err(e) => Json(rpc::error(&id, &e)).into_response(),
            };
        }
        "GetTask" => in_time(&app, get(&app, &caller, params)).await,
        "CancelTask" => in_time(&app, cancel(&app, &caller, params)).await,
        "ListTasks" => in_time(&app, list(&app, &caller, inbox.as_deref(), params)).await,
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => Err(RpcError::new(
            rpc::PUSH_NOT_SUPPORTED,
            "push notifications are not supported; stream with SendStreamingMessage or SubscribeToTask",
        )),
        "GetExtendedAgentCard" => Err(RpcError::new(
            rpc::EXTENDED_CARD_NOT_CONFIGURED,
            "no extended agent card is configured",
        )),
        other => Err(RpcError::new(
            rpc::METHOD_NOT_FOUND,
            format!(
                "no method {other:?}; this agent answers SendMessage, SendStreamingMessage, GetTask, CancelTask and SubscribeToTask"
            ),
        )),
    };
    match outcome {
        Ok(result) => Json(rpc::result(&id, result)).into_response(),
        // A late answer is a 503 as on the other routes, its body still a JSON-RPC error.
        Err(e) if e.code == rpc::TIMED_OUT => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            Json(rpc::error(&id, &e)),
        )
            .into_response(),
        Err(e) => Json(rpc::error(&id, &e)).into_response(),
    }
}
