//! An A2A `SendMessage` request → the chorus document published for it: the seed-003 handoff of
//! a message that uses the handoff extension, else a chorus message decoded by the `a2a` codec.

use chorus_core::Problem;
use chorus_formats::{A2a, Codec};
use serde_json::{Map, Value, json};

use super::HANDOFF_EXTENSION;
use super::rpc::{RpcError, describe};

/// What one A2A message becomes on the bus.
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    /// The chorus message or seed-003 handoff to publish.
    pub document: Value,
    /// The chorus task (and A2A task) id.
    pub task_id: String,
    /// The A2A context id (the chorus conversation id).
    pub context_id: String,
    /// True for a plain message that names an existing task (`taskId`) to continue.
    pub continues: bool,
}

/// Builds the document `caller` publishes for the `SendMessage` parameters `params`, sent to the
/// inbox `endpoint` (`None` at the hub's endpoint: the message names its recipient). A new task
/// id is `new_task`.
pub fn to_chorus(
    params: &Value,
    caller: &str,
    endpoint: Option<&str>,
    new_task: &str,
) -> Result<Inbound, RpcError> {
    let message = match params.get("message") {
        Some(m @ Value::Object(_)) => m,
        other => {
            return Err(RpcError::params(Problem::expected(
                "/message",
                "an A2A Message object",
                other.map_or("nothing".into(), describe),
            )));
        }
    };
    let text = |key: &str| -> Result<Option<String>, RpcError> {
        match message.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
            Some(other) => Err(RpcError::params(Problem::expected(
                format!("/message/{key}"),
                "a non-empty string",
                describe(other),
            ))),
        }
    };
    let task_id = text("taskId")?;
    let context_id = text("contextId")?;
    let extended = message
        .get("extensions")
        .and_then(Value::as_array)
        .is_some_and(|e| e.iter().any(|u| u.as_str() == Some(HANDOFF_EXTENSION)));
    if extended {
        if let Some((index, packet)) = handoff_part(message) {
            return handoff(packet, index, caller, endpoint, task_id, context_id);
        }
        return Err(RpcError::params(
            Problem::expected(
                "/message/parts",
                "a data part holding a seed-003 handoff packet (metadata, payload)",
                "none",
            )
            .with_hint(format!(
                "a message listing {HANDOFF_EXTENSION} carries its handoff in a data part"
            )),
        ));
    }
    let continues = task_id.is_some();
    let task_id = task_id.unwrap_or_else(|| new_task.to_owned());
    let context_id = context_id.unwrap_or_else(|| task_id.clone());
    let conversation = A2a::decode(message.clone()).map_err(|p| RpcError::params(under(p)))?;
    let Some(decoded) = conversation.messages.into_iter().next() else {
        return Err(RpcError::params(Problem::expected(
            "/message",
            "one message",
            "none",
        )));
    };
    let mut document = match serde_json::to_value(&decoded) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    let recipient = match endpoint {
        Some(e) => e.to_owned(),
        None => recipient_of(message)?,
    };
    document.insert("name".into(), json!(caller));
    document.insert("recipient".into(), json!(recipient));
    let mut metadata = match document.remove("metadata") {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    metadata.insert("task_id".into(), json!(task_id));
    // A chorus message's conversation is its `metadata.session_id`: the task keeps the A2A
    // context there, and reads it back from the stored message.
    metadata.insert("session_id".into(), json!(context_id));
    document.insert("metadata".into(), Value::Object(metadata));
    Ok(Inbound {
        document: Value::Object(document),
        task_id,
        context_id,
        continues,
    })
}

/// The first data part whose data is a seed-003 packet (an object with `metadata` and `payload`).
fn handoff_part(message: &Value) -> Option<(usize, &Value)> {
    message
        .get("parts")?
        .as_array()?
        .iter()
        .enumerate()
        .find_map(|(i, p)| {
            let data = p.get("data")?;
            (data.get("metadata").is_some() && data.get("payload").is_some()).then_some((i, data))
        })
}

/// The handoff packet of part `index`, addressed to `endpoint` and in the A2A task.
fn handoff(
    packet: &Value,
    index: usize,
    caller: &str,
    endpoint: Option<&str>,
    task_id: Option<String>,
    context_id: Option<String>,
) -> Result<Inbound, RpcError> {
    let at = format!("/message/parts/{index}/data/metadata");
    let mut packet = packet.clone();
    let Some(meta) = packet.get_mut("metadata").and_then(Value::as_object_mut) else {
        return Err(RpcError::params(Problem::expected(
            at,
            "an object",
            describe(&packet["metadata"]),
        )));
    };
    meta.entry("sender_id").or_insert_with(|| json!(caller));
    if let Some(endpoint) = endpoint {
        match meta.get("recipient_id") {
            None => {
                meta.insert("recipient_id".into(), json!(endpoint));
            }
            Some(r) if r.as_str() == Some(endpoint) => {}
            Some(r) => {
                return Err(RpcError::params(
                    Problem::expected(
                        format!("{at}/recipient_id"),
                        format!("{endpoint:?}, the agent of this endpoint"),
                        describe(r),
                    )
                    .with_hint("send it to the recipient's own endpoint, or to the hub's /a2a"),
                ));
            }
        }
    }
    let packet_task = meta
        .get("task_id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let task_id = match (task_id, packet_task) {
        (Some(a), Some(p)) if a != p => {
            return Err(RpcError::params(Problem::expected(
                format!("{at}/task_id"),
                format!("the message's taskId {a:?}"),
                format!("{p:?}"),
            )));
        }
        (_, Some(p)) => p,
        (Some(a), None) => {
            meta.insert("task_id".into(), json!(a));
            a
        }
        (None, None) => {
            return Err(RpcError::params(Problem::expected(
                format!("{at}/task_id"),
                "the task id (seed 003 requires one)",
                "nothing",
            )));
        }
    };
    let context_id = context_id
        .or_else(|| {
            ["conversation_id", "correlation_id"]
                .iter()
                .find_map(|k| meta.get(*k).and_then(Value::as_str).map(str::to_owned))
        })
        .unwrap_or_else(|| task_id.clone());
    Ok(Inbound {
        document: packet,
        task_id,
        context_id,
        continues: false,
    })
}

/// The recipient a plain message names at the hub's endpoint (`metadata.recipient`).
fn recipient_of(message: &Value) -> Result<String, RpcError> {
    match message.pointer("/metadata/recipient") {
        Some(Value::String(r)) if !r.is_empty() => Ok(r.clone()),
        other => Err(RpcError::params(
            Problem::expected(
                "/message/metadata/recipient",
                "the agent or pool the message is for",
                other.map_or("nothing".into(), describe),
            )
            .with_hint("or send it to that agent's own endpoint, /a2a/{name}"),
        )),
    }
}

/// A codec problem at its place in the request (under `/message`).
fn under(mut problem: Problem) -> Problem {
    problem.pointer = format!("/message{}", problem.pointer);
    problem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_message_becomes_a_chorus_message_from_the_caller() {
        let params = json!({"message": {"messageId": "m1", "role": "ROLE_USER",
            "parts": [{"text": "hello"}], "metadata": {"chorus": {"name": "mallory"}}}});
        let inbound = to_chorus(&params, "alice", Some("bob"), "t-new").unwrap();
        let d = &inbound.document;
        assert_eq!(
            (d["name"].as_str(), d["recipient"].as_str()),
            (Some("alice"), Some("bob"))
        );
        assert_eq!(
            (d["id"].as_str(), d["content"][0]["text"].as_str()),
            (Some("m1"), Some("hello"))
        );
        assert_eq!(d["metadata"]["task_id"], "t-new");
        assert_eq!(inbound.context_id, "t-new");
        assert_eq!(d["metadata"]["session_id"], "t-new");
    }

    #[test]
    fn a_handoff_keeps_its_keys_and_is_addressed_to_the_endpoint() {
        let packet = json!({"metadata": {"message_id": "h1", "sender_id": "alice", "task_id": "t1",
            "priority": "HIGH", "expiration_time": "2099-01-01T00:00:00Z"},
            "payload": {"handoff_type": "ESCALATION", "data": {}}});
        let params = json!({"message": {"messageId": "m1", "role": "ROLE_USER",
            "extensions": [HANDOFF_EXTENSION], "parts": [{"text": "see data"}, {"data": packet}]}});
        let inbound = to_chorus(&params, "alice", Some("bob"), "unused").unwrap();
        assert_eq!(inbound.task_id, "t1");
        assert_eq!(inbound.document["metadata"]["recipient_id"], "bob");
        assert_eq!(inbound.document["metadata"]["priority"], "HIGH");
        let mut other = params.clone();
        other["message"]["parts"][1]["data"]["metadata"]["recipient_id"] = json!("carol");
        let err = to_chorus(&other, "alice", Some("bob"), "x").unwrap_err();
        assert_eq!(
            err.issues[0].pointer,
            "/message/parts/1/data/metadata/recipient_id"
        );
    }

    #[test]
    fn refusals_point_into_the_request() {
        let err = to_chorus(&json!({}), "a", Some("b"), "t").unwrap_err();
        assert_eq!(err.issues[0].pointer, "/message");
        let bad_role = json!({"message": {"messageId": "m", "role": "robot", "parts": []}});
        let err = to_chorus(&bad_role, "a", Some("b"), "t").unwrap_err();
        assert_eq!(err.issues[0].pointer, "/message/role");
        let no_recipient =
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}});
        let err = to_chorus(&no_recipient, "a", None, "t").unwrap_err();
        assert_eq!(err.issues[0].pointer, "/message/metadata/recipient");
    }
}
