//! `POST /v1/messages`: publish a chorus message or a seed-003 handoff.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, StatusCode};
use chorus_bus::{BusError, ContentDigest, Envelope, Receipt};
use chorus_core::Problem;
use chorus_core::schema::Kind;
use chorus_core::validate::{Limits, detect_kind, parse};
use serde::Serialize;
use serde_json::Value;
use tracing::{Instrument, field};
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::blobs::Kept;
use crate::error::{ApiError, ErrorBody};
use crate::ids::{check_id, id_problem};
use crate::observe::traceparent;
use crate::policy::Policy;
use crate::state::AppState;
use crate::telemetry;

/// The answer to an accepted publish.
#[derive(Debug, Serialize, ToSchema)]
pub struct PublishReceipt {
    /// The message id.
    pub id: String,
    /// True when this id was already stored (nothing was stored again).
    pub duplicate: bool,
    /// The inboxes the message was stored in.
    pub queues: Vec<String>,
}

impl From<Receipt> for PublishReceipt {
    fn from(r: Receipt) -> PublishReceipt {
        PublishReceipt {
            id: r.id,
            duplicate: r.duplicate,
            queues: r.queues,
        }
    }
}

/// Where the sender, the ids and the recipients sit in a message or a handoff.
struct Pointers {
    sender: &'static str,
    id: &'static str,
    recipients: &'static str,
    task: &'static str,
}

const MESSAGE_POINTERS: Pointers = Pointers {
    sender: "/name",
    id: "/id",
    recipients: "/recipient",
    task: "/metadata/task_id",
};

const HANDOFF_POINTERS: Pointers = Pointers {
    sender: "/metadata/sender_id",
    id: "/metadata/message_id",
    recipients: "/metadata/recipient_id",
    task: "/metadata/task_id",
};

/// The pointers of a document the bus reads as `kind` (only messages and handoffs are routed).
fn pointers(kind: Kind) -> &'static Pointers {
    if kind == Kind::Message {
        &MESSAGE_POINTERS
    } else {
        &HANDOFF_POINTERS
    }
}

/// The refusal of a document whose routing `key` (as [`crate::redact::Redactor::changed_routing`]
/// names it) a redaction rule would rewrite after the checks.
fn redacted_routing(document: &Value, key: &str) -> ApiError {
    let at = detect_kind(document).map(pointers).ok();
    let pointer = match (key, at) {
        ("id", Some(at)) => at.id,
        ("recipients", Some(at)) => at.recipients,
        ("sender", Some(at)) => at.sender,
        ("task_id", Some(at)) => at.task,
        ("correlation_id", _) => "/metadata/correlation_id",
        _ => "",
    };
    let issue = Problem::expected(
        pointer,
        format!("a {key} that the server's redaction rules leave as it is"),
        "one a rule of [redact] would rewrite after the sender, id and policy checks",
    )
    .with_hint("narrow the [redact] pattern or pointer so that it does not match routing keys; nothing was stored");
    ApiError::invalid(vec![issue], None)
}

/// Refuses, before anything is stored, what the caller may not send: another sender's name,
/// ids that could inject a path, a header or a log line, what the policy forbids.
///
/// The document's kind is decided once, by the classification the bus routes by
/// ([`Envelope::from_document`]): a document the bus would not route (a conversation, a data
/// part, the keys of two kinds) is refused here and nothing is stored. The checks run on the
/// envelope the message would be stored and delivered under. A message or handoff whose routing
/// keys are missing or malformed gives no envelope (`None`): the bus refuses it and keeps it as
/// a dead letter, once its sender (when given) is the caller.
fn admit(policy: &Policy, agent: &str, document: &Value) -> Result<Option<Envelope>, ApiError> {
    let kind = detect_kind(document).map_err(|problem| ApiError::invalid(vec![problem], None))?;
    let env = match Envelope::from_document(document, Bytes::new()) {
        Ok(env) => env,
        Err(issues) if !matches!(kind, Kind::Message | Kind::Handoff) => {
            return Err(ApiError::invalid(issues, None));
        }
        Err(_) => {
            let at = pointers(kind);
            if let Some(sender) = document.pointer(at.sender).and_then(Value::as_str) {
                check_sender(at, sender, agent)?;
            }
            if let Some(id) = document.pointer(at.id).and_then(Value::as_str) {
                check_id(format_args!("the message id at {}", at.id), id)?;
            }
            return Ok(None);
        }
    };
    let at = pointers(kind);
    match env.sender.as_deref() {
        Some(sender) => check_sender(at, sender, agent)?,
        None => {
            let issue = Problem::expected(at.sender, "the sending agent's id", "nothing")
                .with_hint(format!("set {} to {agent:?}", at.sender));
            return Err(ApiError::invalid(vec![issue], None));
        }
    }
    check_id(format_args!("the message id at {}", at.id), &env.id)?;
    for r in &env.recipients {
        check_id(format_args!("the recipient at {}", at.recipients), r)?;
    }
    if let Some(id) = &env.task_id {
        check_id(format_args!("the task id at {}", at.task), id)?;
    }
    if let Some(id) = &env.correlation_id {
        check_id("the correlation id at /metadata/correlation_id", id)?;
    }
    if let Some(id) = &env.conversation_id {
        check_id("the conversation id", id)?;
    }
    let recipients: Vec<&str> = env.recipients.iter().map(String::as_str).collect();
    let routed = policy.routed_recipients(&recipients, document);
    policy.may_send(agent, &routed, env.handoff_type.as_deref())?;
    if let Some(r) = policy.unknown_recipient(&recipients, &routed) {
        let issue = Problem::expected(at.recipients, "a configured agent or an inbox an agent reads", format!("{r:?}, which nobody reads"))
            .with_hint("check the spelling; add the agent to chorus.toml, or the pool to an agent's `read`; or set accept_unknown_recipients = true");
        return Err(ApiError::invalid(vec![issue], None));
    }
    Ok(Some(env))
}

/// Refuses (403) a sender other than the calling agent.
fn check_sender(at: &Pointers, sender: &str, agent: &str) -> Result<(), ApiError> {
    if sender == agent {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "the sender at {} is {:?}, but the token belongs to agent {agent:?}; an agent sends only as itself",
        at.sender,
        sender.escape_debug().to_string()
    )))
}

/// Publishes one message or handoff; the body is the document itself.
#[utoipa::path(
    post,
    path = "/v1/messages",
    tag = "messages",
    request_body(
        content = Object,
        content_type = "application/json",
        description = "A chorus message (with `role`, `id`, `name` = your agent id, `recipient`) or a seed-003 handoff packet (`metadata.sender_id` = your agent id)"
    ),
    responses(
        (status = 201, description = "Stored durably", body = PublishReceipt),
        (status = 200, description = "This id was already stored with the same content (the same JSON value, however serialised); nothing stored again", body = PublishReceipt),
        (status = 400, description = "Malformed JSON or an unsafe id", body = ErrorBody),
        (status = 401, description = "No or unknown bearer token", body = ErrorBody),
        (status = 403, description = "The sender is not the authenticated agent", body = ErrorBody),
        (status = 409, description = "This id was already stored with other content (`conflict`, the issue at the id's pointer); nothing stored", body = ErrorBody),
        (status = 413, description = "The body is larger than the limit", body = ErrorBody),
        (status = 422, description = "Not a valid message or handoff: every problem with its JSON pointer", body = ErrorBody),
        (status = 429, description = "Too many requests from this agent; see Retry-After", body = ErrorBody),
    ),
    security(("bearer" = []))
)]
pub async fn publish(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<PublishReceipt>), ApiError> {
    let agent = publisher(caller)?;
    publish_body(&app, &agent, traceparent(&headers), body).await
}

/// The agent a publish is sent as (the admin token cannot publish).
pub(crate) fn publisher(caller: Caller) -> Result<String, ApiError> {
    let Caller::Agent(agent) = caller else {
        return Err(ApiError::forbidden(
            "the admin token cannot publish; publish with the sending agent's token",
        ));
    };
    Ok(agent)
}

/// Publishes one document as `agent` (a request's body, or an item of a batch, with the
/// caller's `traceparent` header as `incoming`): the rate check, the checks and the store,
/// under a span of its own.
pub(crate) async fn publish_body(
    app: &AppState,
    agent: &str,
    incoming: Option<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<(StatusCode, Json<PublishReceipt>), ApiError> {
    let started = std::time::Instant::now();
    let read = app
        .rate
        .check(agent)
        .and_then(|()| read_document(app, body));
    let carried = match &read {
        Ok((_, document)) => telemetry::joined(&app.traces, incoming.clone(), document).await,
        Err(_) => None,
    };
    let span = tracing::info_span!(
        "publish",
        otel.kind = "producer",
        messaging.system = telemetry::SYSTEM,
        messaging.operation.type = "send",
        messaging.operation.name = "publish",
        messaging.destination.name = field::Empty,
        messaging.message.id = field::Empty,
        %agent,
        traceparent = %incoming.as_deref().unwrap_or("-"),
        message_id = field::Empty,
        correlation_id = field::Empty,
        task_id = field::Empty,
    );
    telemetry::link(&span, carried.as_deref());
    let result = store(app, agent, read, carried, started)
        .instrument(span.clone())
        .await;
    match &result {
        // Per message at `debug`: at `info` the log says what changes the hub for a person,
        // and counts of messages are in /metrics (three lines a message were a third of the
        // server's CPU and 1.8 KB of log per 1 KiB message).
        Ok((status, receipt)) => tracing::debug!(
            parent: &span,
            status = status.as_u16(),
            queues = ?receipt.queues,
            "accepted"
        ),
        Err(e) => tracing::warn!(
            parent: &span,
            status = e.status.as_u16(),
            error = %e.body.error,
            "refused"
        ),
    }
    result
}

/// The body and the JSON document in it, or why there is none.
fn read_document(
    app: &AppState,
    body: Result<Bytes, BytesRejection>,
) -> Result<(Bytes, Value), ApiError> {
    let bytes = body.map_err(|e| body_error(&e, app.max_body_bytes))?;
    let document = parse_json(&bytes)?;
    Ok((bytes, document))
}

/// The JSON document in `bytes`, read as `chorus validate` reads it on every route (the
/// publish, A2A, MCP, the journal): duplicate keys and nesting deeper than 64 are refused
/// (422 at their pointer), so that the same bytes mean the same everywhere; what is not JSON
/// is a 400 with its line and column. The body limit already bounds the size.
pub(crate) fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    let limits = Limits {
        max_bytes: usize::MAX,
        ..Limits::default()
    };
    parse(bytes, &limits).map_err(|problem| {
        match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            Err(e) => ApiError::bad_request(
                "malformed_json",
                format!(
                    "the body is not JSON: {e} (line {}, column {})",
                    e.line(),
                    e.column()
                ),
            ),
            Ok(_) => ApiError::invalid(vec![problem], None),
        }
    })
}

/// Checks, redacts and stores one published document (read by [`read_document`] after the
/// rate check).
async fn store(
    app: &AppState,
    agent: &str,
    read: Result<(Bytes, Value), ApiError>,
    carried: Option<String>,
    started: std::time::Instant,
) -> Result<(StatusCode, Json<PublishReceipt>), ApiError> {
    let (bytes, mut document) = read?;
    // The pointers of the kind the document has (a document of no kind is refused by
    // `admit`; until then, read as a handoff's).
    let at = pointers(detect_kind(&document).unwrap_or(Kind::Handoff));
    record_keys(at, &document);
    let env = admit(&app.policy, agent, &document)?;
    if let Some(key) = app.redactor.changed_routing(&document) {
        return Err(redacted_routing(&document, key));
    }
    let taken = take_inboxes(app, agent, env.as_ref(), at)?;
    let stored = async {
        // Media is written only for a document the bus will take: one it refuses (kept as a
        // dead letter with its media inline, or expired) writes no file.
        // What it created is taken back when the store refuses the document as a conflict.
        let kept = match &env {
            Some(env) if app.blobs.has_media(&document) && !refused_anyway(app, env, &document) => {
                app.blobs.keep_media(&mut document, agent).await?
            }
            _ => Kept::default(),
        };
        let redacted = app.redactor.apply(&mut document);
        let context = env
            .as_ref()
            .and_then(|_| telemetry::outgoing(&tracing::Span::current(), carried));
        let traced = context
            .as_deref()
            .is_some_and(|tp| telemetry::stamp(&mut document, tp));
        let changed = kept.changed || redacted || traced;
        let bytes = if changed {
            serde_json::to_vec(&document)
                .map_err(|e| {
                    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
                })?
                .into()
        } else {
            bytes
        };
        // Kept before the message is stored, so that no delivery of it goes out without it;
        // taken back when the publish is refused (and never replacing the context of a
        // message stored before under the same id).
        let trace_kept = match (&env, &context) {
            (Some(env), Some(tp)) => keep_trace(app, env, tp).await,
            _ => false,
        };
        let forget = match (&env, trace_kept) {
            (Some(env), true) => Some(env.id.clone()),
            _ => None,
        };
        // The envelope read by the checks is the bus's own reading of an unchanged document.
        let read = env.filter(|_| !changed);
        let published = app
            .bus
            .publish_read(bytes, &document, read, Some(agent))
            .await;
        match &published {
            // Nothing stored and no dead letter points at them: the blobs go. (Not for other
            // errors: a refusal kept as a dead letter points at them, and a store error may
            // come after the message was stored.)
            Err(BusError::Conflict { .. }) => app.blobs.take_back(kept.created).await,
            _ => app.blobs.settle(kept.created),
        }
        if let (Err(_), Some(id)) = (&published, &forget)
            && let Err(e) = app.traces.forget(id).await
        {
            tracing::warn!(error = %e, "the trace context of a refused message was not forgotten");
        }
        match &published {
            Ok(_) => app.writes.succeeded(),
            // A store that could not write (disk full, a file-size limit). Not a server store's
            // error: a client can cause one (a message over NATS's payload limit), and a lost
            // server is what the probe finds.
            Err(e @ BusError::Storage(_)) => app.writes.failed(&e.to_string()),
            Err(_) => {}
        }
        published.map_err(|e| {
            if let BusError::Conflict { id, found, .. } = e {
                return conflict(&document, &id, found);
            }
            let e = ApiError::from(e);
            if e.body.dead_letter_id.is_some() {
                app.metrics.dead_lettered.inc();
            }
            e
        })
    }
    .await;
    let receipt = stored.inspect_err(|_| app.quota.give_back(agent, &taken))?;
    let status = if receipt.duplicate {
        app.metrics.duplicates.inc();
        StatusCode::OK
    } else {
        app.metrics.published.inc();
        app.metrics
            .publish_seconds
            .observe(started.elapsed().as_secs_f64());
        for q in &receipt.queues {
            app.metrics.saw_inbox(q);
        }
        StatusCode::CREATED
    };
    Ok((status, Json(receipt.into())))
}

/// Takes, from the agent's cap on new inboxes, the recipients of `env` the config does not
/// name (before anything is written).
fn take_inboxes(
    app: &AppState,
    agent: &str,
    env: Option<&Envelope>,
    at: &Pointers,
) -> Result<Vec<String>, ApiError> {
    let Some(env) = env else {
        return Ok(Vec::new());
    };
    let fresh: Vec<&str> = env
        .recipients
        .iter()
        .map(String::as_str)
        .filter(|r| !app.policy.names(r))
        .collect();
    app.quota.take(agent, &fresh, at.recipients)
}

/// 409 for an id the bus holds with other content, the issue at the document's id.
///
/// Nothing is said of the stored content (not even its digest, which would confirm a guess of
/// it to a caller who did not send it); the caller's own content's digest is given.
fn conflict(document: &Value, id: &str, found: ContentDigest) -> ApiError {
    let at = pointers(detect_kind(document).unwrap_or(Kind::Handoff)).id;
    let issue = Problem::expected(
        at,
        format!("the content first published under {id:?}, or a new id"),
        format!("other content (sha256 {found})"),
    )
    .with_hint("a retry must send the same document (key order, spacing and number spelling may differ); a new message needs a new id");
    let mut e = ApiError::new(
        StatusCode::CONFLICT,
        "conflict",
        format!("message id {id:?} was already stored with other content; nothing was stored"),
    );
    e.body.issues = vec![issue.into()];
    e
}

/// True when the bus would refuse `document`: expired, or refused by its validator (asked
/// only for a document with media: the bus validates every document again when it is
/// published).
fn refused_anyway(app: &AppState, env: &Envelope, document: &Value) -> bool {
    env.expires_at_ms
        .is_some_and(|at| at <= chorus_bus::now_ms())
        || app
            .bus
            .config()
            .validator
            .as_ref()
            .is_some_and(|v| !v.validate(document).is_empty())
}

/// Keeps the trace context of the message about to be stored by its id (for handoffs, whose
/// metadata cannot take it; a chorus message also has it stamped in its metadata); true when
/// this publish kept it (none was kept for the id before).
async fn keep_trace(app: &AppState, env: &Envelope, tp: &str) -> bool {
    match app
        .traces
        .keep(&env.id, env.correlation_id.as_deref(), tp)
        .await
    {
        Ok(kept) => kept,
        Err(e) => {
            tracing::warn!(error = %e, "trace context not kept");
            false
        }
    }
}

/// Records the document's ids (never its contents) on the current span: only ids of the safe
/// alphabet, so that nothing a client sent can break a log line or forge one.
fn record_keys(at: &Pointers, document: &Value) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    for (name, pointer) in [
        ("message_id", at.id),
        ("messaging.message.id", at.id),
        ("messaging.destination.name", at.recipients),
        ("correlation_id", "/metadata/correlation_id"),
        ("task_id", at.task),
    ] {
        if let Some(v) = document.pointer(pointer).and_then(Value::as_str)
            && id_problem(v).is_none()
        {
            span.record(name, field::display(v));
        }
    }
}

/// The message id `document` names, when it is a safe id: how a refused item of a batch is
/// answered.
pub(crate) fn named_id(document: &Value) -> Option<String> {
    let at = pointers(detect_kind(document).unwrap_or(Kind::Handoff));
    document
        .pointer(at.id)
        .and_then(Value::as_str)
        .filter(|v| id_problem(v).is_none())
        .map(str::to_owned)
}

/// A body that could not be read: too large (413), not whole within the request timeout (408),
/// or cut short (400).
pub fn body_error(e: &BytesRejection, limit: usize) -> ApiError {
    if let Some(t) = crate::body_edge::timed_out(e) {
        return crate::body_edge::late(t);
    }
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        crate::body_edge::too_large_read(limit)
    } else {
        ApiError::new(e.status(), "unreadable_body", e.body_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn admits_own_messages_and_refuses_spoofing_and_injection() {
        let msg = json!({"role": "user", "id": "m1", "name": "alice", "recipient": "bob", "content": "hi"});
        assert!(admit(&Policy::default(), "alice", &msg).is_ok());
        assert_eq!(
            admit(&Policy::default(), "mallory", &msg)
                .unwrap_err()
                .status,
            StatusCode::FORBIDDEN
        );
        let mut bad = msg.clone();
        bad["id"] = json!("m1\r\nX-Injected: 1");
        assert_eq!(
            admit(&Policy::default(), "alice", &bad).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        let mut bad = msg.clone();
        bad["recipient"] = json!("../bob");
        assert_eq!(
            admit(&Policy::default(), "alice", &bad).unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
        let mut nameless = msg;
        nameless.as_object_mut().unwrap().remove("name");
        let e = admit(&Policy::default(), "alice", &nameless).unwrap_err();
        assert_eq!(e.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(e.body.issues[0].pointer, "/name");
    }

    #[test]
    fn reads_the_handoff_sender() {
        let handoff = json!({
            "metadata": {"sender_id": "alice", "message_id": "h/1", "recipient_id": "bob",
                         "task_id": "t-1", "priority": "HIGH"},
            "payload": {"handoff_type": "STATUS_UPDATE"}
        });
        assert_eq!(
            admit(&Policy::default(), "bob", &handoff)
                .unwrap_err()
                .status,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            admit(&Policy::default(), "alice", &handoff)
                .unwrap_err()
                .body
                .error,
            "bad_id"
        );
    }
}
