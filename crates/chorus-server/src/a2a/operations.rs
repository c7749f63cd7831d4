//! The A2A operations, whatever the binding: send, get, cancel, and the checks before a stream;
//! every message is published as the authenticated caller through the same checks as
//! `POST /v1/messages`, and a task is read as the caller may see it.

use std::time::Duration;

use axum::body::Bytes;
use chorus_bus::{Envelope, PEEK_LIMIT, QueuedState};
use chorus_core::Problem;
use serde_json::{Value, json};

use super::inbound::to_chorus;
use super::rpc::{self, RpcError};
use super::task::{CANCELED_EVENT, Entry, State, TaskView};
use crate::api::publish::{publish_body, publisher};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// How often a waiting call or an open stream looks at its task again after a change.
pub(super) const POLL: Duration = Duration::from_millis(100);

/// How often an open stream looks at least, when its task has not changed for a while (the
/// pause doubles from [`POLL`] up to this): an idle stream costs a fifth of a busy one.
pub(super) const SLOWEST_POLL: Duration = Duration::from_millis(500);

/// How long a blocking `SendMessage` waits for the task to end or to need input.
const BLOCKING_WAIT: Duration = Duration::from_secs(30);

/// Publishes the message of `params` as the caller; its task id.
pub(super) async fn publish(
    app: &AppState,
    caller: &Caller,
    inbox: Option<&str>,
    params: &Value,
) -> Result<String, RpcError> {
    let agent = publisher(caller.clone()).map_err(refusal)?;
    let message_id = params.pointer("/message/messageId").and_then(Value::as_str);
    let fresh = new_task_id(&agent, message_id);
    let inbound = to_chorus(params, &agent, inbox, &fresh)?;
    let timeline = timeline(app, &inbound.task_id).await?;
    // The same message sent again (a client's retry) finds the task its first copy started:
    // it is published again, the same document, and the hub answers it as a duplicate.
    let retry = !inbound.continues
        && inbound.task_id == fresh
        && timeline.first().is_some_and(|first| {
            Some(first.id.as_str()) == message_id && first.sender.as_deref() == Some(&agent)
        });
    // A message for a task that exists (named by taskId, or a handoff's task_id already in
    // use): only into one the caller may see, and still open — a handoff cannot join or take
    // over another party's task by choosing its id.
    if !retry && (inbound.continues || !timeline.is_empty()) {
        let view = load(app, caller, &inbound.task_id).await?;
        if view.state.is_terminal() {
            return Err(RpcError::new(
                rpc::UNSUPPORTED_OPERATION,
                format!(
                    "task {:?} is {}; a finished task takes no more messages (send without \
                     taskId to start a new one)",
                    inbound.task_id,
                    view.state.as_str()
                ),
            ));
        }
    }
    let bytes = serde_json::to_vec(&inbound.document)
        .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, e.to_string()))?;
    let (_status, _receipt) = publish_body(app, &agent, None, Ok(Bytes::from(bytes)))
        .await
        .map_err(refusal)?;
    Ok(inbound.task_id)
}

/// The id of the task a message without `taskId` starts: the same for the same sender and
/// `messageId`, so that a retry of the message is the same document (a fresh id for one with
/// no `messageId`, which the decoder refuses anyway).
fn new_task_id(agent: &str, message_id: Option<&str>) -> String {
    match message_id {
        Some(id) => {
            let name = format!("chorus a2a task\0{agent}\0{id}");
            uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, name.as_bytes()).to_string()
        }
        None => uuid::Uuid::new_v4().to_string(),
    }
}

/// `SendMessage`: publishes, then (unless `configuration.returnImmediately`) waits until the
/// task ends or needs input, at most [`BLOCKING_WAIT`] or 80 % of the request timeout.
pub(super) async fn send(
    app: &AppState,
    caller: &Caller,
    inbox: Option<&str>,
    params: &Value,
) -> Result<Value, RpcError> {
    let history = history_length(params, "/configuration/historyLength")?;
    let immediate = params
        .pointer("/configuration/returnImmediately")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // Counted from the call's start and within the request timeout, so that the task comes
    // back (with its id) rather than a 503.
    let wait = app
        .request_timeout
        .map_or(BLOCKING_WAIT, |limit| BLOCKING_WAIT.min(limit.mul_f64(0.8)));
    let deadline = tokio::time::Instant::now() + wait;
    let task_id = publish(app, caller, inbox, params).await?;
    loop {
        let view = load(app, caller, &task_id).await?;
        let stopping = *app.stopping.borrow();
        if immediate
            || view.state.ends_stream()
            || stopping
            || tokio::time::Instant::now() >= deadline
        {
            return Ok(view.to_json(history));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// `GetTask`.
pub(super) async fn get(
    app: &AppState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, RpcError> {
    let id = task_id(params)?;
    let history = history_length(params, "/historyLength")?;
    Ok(load(app, caller, &id).await?.to_json(history))
}

/// `CancelTask`: publishes a NOTIFICATION (`A2A_TASK_CANCELED`) into the task, as the caller,
/// to the recipients of the task's first message.
pub(super) async fn cancel(
    app: &AppState,
    caller: &Caller,
    params: &Value,
) -> Result<Value, RpcError> {
    let id = task_id(params)?;
    let view = load(app, caller, &id).await?;
    if view.state.is_terminal() {
        return Err(RpcError::new(
            rpc::TASK_NOT_CANCELABLE,
            format!("task {id:?} is {} already", view.state.as_str()),
        ));
    }
    let agent = publisher(caller.clone()).map_err(refusal)?;
    // The other side of the task hears of it: the first message's recipients, or its sender
    // when the answering side cancels.
    let first = timeline(app, &id).await?.into_iter().next();
    let recipients = match first {
        Some(e) if e.sender.as_deref() == Some(agent.as_str()) => e.recipients,
        Some(e) => e.sender.into_iter().collect(),
        None => Vec::new(),
    };
    let packet = json!({
        "metadata": {
            "message_id": uuid::Uuid::new_v4().to_string(),
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "protocol_version": "1.0.0",
            "sender_id": agent,
            "recipient_id": recipients,
            "task_id": id,
            "correlation_id": view.context_id,
            "priority": "HIGH",
        },
        "context": {"workflow_state": CANCELED_EVENT, "previous_actions": []},
        "payload": {"handoff_type": "NOTIFICATION", "data": {
            "event_type": CANCELED_EVENT,
            "message": "The A2A client canceled the task; stop working on it.",
        }},
        "instructions": {},
    });
    let bytes = serde_json::to_vec(&packet)
        .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, e.to_string()))?;
    let (_status, _receipt) = publish_body(app, &agent, None, Ok(Bytes::from(bytes)))
        .await
        .map_err(refusal)?;
    Ok(load(app, caller, &id).await?.to_json(None))
}

/// The task id of a `SubscribeToTask`, when the task may still change.
pub(super) async fn subscribable(
    app: &AppState,
    caller: &Caller,
    params: &Value,
) -> Result<String, RpcError> {
    let id = task_id(params)?;
    let view = load(app, caller, &id).await?;
    if view.state.is_terminal() {
        return Err(RpcError::new(
            rpc::UNSUPPORTED_OPERATION,
            format!(
                "task {id:?} is {}; there is nothing to subscribe to",
                view.state.as_str()
            ),
        ));
    }
    Ok(id)
}

/// The stored messages of a task, in publish order.
async fn timeline(app: &AppState, id: &str) -> Result<Vec<Envelope>, RpcError> {
    app.bus
        .by_task(id)
        .await
        .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, e.to_string()))
}

/// The task `id` as the caller may see it: one whose messages it sent or may read.
pub(super) async fn load(app: &AppState, caller: &Caller, id: &str) -> Result<TaskView, RpcError> {
    let mut envelopes = timeline(app, id).await?;
    // The parties of a task are the sender of its first message and whoever may read an inbox
    // that message went to; a message added to the task later does not make its sender one.
    let party = |first: &Envelope, agent: &str| {
        first.sender.as_deref() == Some(agent)
            || first.recipients.iter().any(|r| {
                app.policy
                    .may_read(&Caller::Agent(agent.to_owned()), r)
                    .is_ok()
            })
    };
    let visible = match (caller, envelopes.first()) {
        (_, None) => false,
        (Caller::Admin, Some(_)) => true,
        (Caller::Agent(name), Some(first)) => party(first, name),
    };
    // What others put under the same task id is not this task's: it neither shows in its
    // history nor moves its state (an outsider cannot complete or cancel someone's task).
    if let Some(first) = envelopes.first().cloned() {
        envelopes.retain(|e| e.sender.as_deref().is_some_and(|s| party(&first, s)));
    }
    if !visible {
        return Err(RpcError::new(
            rpc::TASK_NOT_FOUND,
            format!("no task {id:?} that this token may see"),
        ));
    }
    let context = envelopes[0]
        .conversation_id
        .clone()
        .unwrap_or_else(|| id.to_owned());
    let entries: Vec<Entry> = envelopes
        .iter()
        .map(|e| Entry {
            sender: e.sender.clone(),
            id: e.id.clone(),
            document: serde_json::from_slice(&e.bytes).unwrap_or(Value::Null),
        })
        .collect();
    let mut view = TaskView::new(id, &context, &entries);
    view.opened_to = envelopes[0].recipients.clone();
    if view.state == State::Submitted {
        // Only then is the store looked at: did the client's latest message become a dead
        // letter (rejected), or has the recipient not taken it yet (submitted)?
        let client = envelopes[0].sender.clone();
        let last_asked = envelopes.iter().rev().find(|e| e.sender == client);
        let letter = match last_asked {
            Some(env) => given_up(app, env, id).await?,
            None => None,
        };
        if let Some(letter) = letter {
            view.reject(&letter);
        } else if !matches!(last_asked, Some(env) if waits_unclaimed(app, env).await) {
            view.state = State::Working;
        }
    }
    Ok(view)
}

/// The dead letter that says `env` (a message of task `task`) was given up, when every copy of
/// it in its recipients' queues became one: only letters a delivery of this very message
/// became count (same sender, same task, one of its queues), so no one can reject another's
/// task by publishing bytes that name its message id. The newest of them.
async fn given_up(
    app: &AppState,
    env: &Envelope,
    task: &str,
) -> Result<Option<chorus_bus::DeadLetter>, RpcError> {
    let letters = app
        .bus
        .dead_letters_of(&env.id)
        .await
        .map_err(|e| RpcError::new(rpc::INTERNAL_ERROR, e.to_string()))?;
    let ours: Vec<_> = letters
        .into_iter()
        .filter(|l| {
            l.envelope
                .as_ref()
                .is_some_and(|e| e.sender == env.sender && e.task_id.as_deref() == Some(task))
                && l.queue.as_ref().is_some_and(|q| env.recipients.contains(q))
        })
        .collect();
    let all_given_up = !env.recipients.is_empty()
        && env
            .recipients
            .iter()
            .all(|r| ours.iter().any(|l| l.queue.as_ref() == Some(r)));
    Ok(all_given_up.then(|| ours.into_iter().last()).flatten())
}

/// True while `env` waits in one of its recipients' queues, never delivered.
async fn waits_unclaimed(app: &AppState, env: &Envelope) -> bool {
    for queue in &env.recipients {
        let Ok(queued) = app.bus.peek(queue, PEEK_LIMIT).await else {
            continue;
        };
        if queued.iter().any(|q| {
            q.envelope.id == env.id && q.state == QueuedState::Ready && q.attempts.unwrap_or(0) == 0
        }) {
            return true;
        }
    }
    false
}

/// The required `id` parameter.
fn task_id(params: &Value) -> Result<String, RpcError> {
    match params.get("id") {
        Some(Value::String(id)) if !id.is_empty() => Ok(id.clone()),
        other => Err(RpcError::params(Problem::expected(
            "/id",
            "the task id",
            other.map_or("nothing".into(), rpc::describe),
        ))),
    }
}

/// An optional non-negative `historyLength` at `pointer`.
pub(super) fn history_length(params: &Value, pointer: &str) -> Result<Option<usize>, RpcError> {
    match params.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                RpcError::params(Problem::expected(
                    pointer,
                    "a non-negative integer",
                    rpc::describe(v),
                ))
            }),
    }
}

/// A refusal of the HTTP API (policy, validation, rate) as a JSON-RPC error with its problems;
/// the JSON-RPC code is A2A's (invalid parameters, internal error), the HTTP status and the
/// reason are the API's (403 `PERMISSION_DENIED`, 409 `CONFLICT`, 429 `RATE_LIMITED`, …).
pub(super) fn refusal(e: ApiError) -> RpcError {
    let code = if e.status.is_server_error() {
        rpc::INTERNAL_ERROR
    } else {
        rpc::INVALID_PARAMS
    };
    RpcError {
        code,
        message: format!(
            "{} ({}): {} [the problems point into the chorus document published for the message]",
            e.body.error, e.status, e.body.message
        ),
        issues: e
            .body
            .issues
            .into_iter()
            .map(|i| {
                let mut problem = Problem::error(i.pointer, i.message);
                problem.hint = i.hint;
                problem
            })
            .collect(),
        api: rpc::ApiRefusal::of_status(e.status.as_u16()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked_at_their_pointer() {
        assert_eq!(task_id(&json!({})).unwrap_err().issues[0].pointer, "/id");
        let err = history_length(&json!({"historyLength": -1}), "/historyLength").unwrap_err();
        assert_eq!(err.issues[0].pointer, "/historyLength");
        assert_eq!(
            history_length(&json!({"historyLength": 3}), "/historyLength").unwrap(),
            Some(3)
        );
    }

    #[test]
    fn states_that_end_a_stream() {
        assert!(State::InputRequired.ends_stream() && !State::InputRequired.is_terminal());
        assert!(!State::Working.ends_stream());
    }
}
