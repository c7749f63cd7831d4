//! What goes to the remote agent (an A2A message for a chorus message or handoff) and what
//! comes back (the remote task's answer as a chorus reply or a STATUS_UPDATE).

use chorus_core::{Content, Conversation, HandoffMessage, HandoffType, Message, Nullable, Role};
use chorus_formats::{A2a, Codec, EncodeOptions};
use serde_json::{Map, Value, json};

use crate::agents::Item;
use crate::agents::packet::{PacketDraft, new_message_id};

/// The A2A message sent for `input` (the chorus task id is the A2A context id).
pub fn outgoing(input: &Item, task_id: &str) -> Value {
    let mut message = match input {
        Item::Handoff(h) => json!({
            "messageId": h.metadata.message_id,
            "parts": [
                {"text": describe(h)},
                {"data": serde_json::to_value(h).unwrap_or(Value::Null), "mediaType": "application/json"}
            ],
            "extensions": [A2a::HANDOFF_EXTENSION],
        }),
        Item::Message(m) => {
            let conversation = Conversation {
                messages: vec![m.clone()],
                ..Conversation::default()
            };
            let mut out = A2a::encode(&conversation, &EncodeOptions::default())
                .ok()
                .and_then(|e| e.value.as_array().and_then(|a| a.first().cloned()))
                .unwrap_or_else(|| json!({"parts": [{"text": m.text()}]}));
            if m.id.is_none() {
                // The codec numbers id-less messages from 0; each one sent needs its own id.
                out["messageId"] = json!(new_message_id());
            }
            out
        }
    };
    message["role"] = json!("ROLE_USER");
    message["contextId"] = json!(task_id);
    message
}

/// A line for people (and models) reading the A2A message: type, sender, priority, summary.
fn describe(h: &HandoffMessage) -> String {
    let mut text = format!(
        "{} handoff from {} (priority {}",
        h.payload.handoff_type.as_str(),
        h.metadata.sender_id,
        h.metadata.priority.as_str()
    );
    if let Some(expiry) = &h.metadata.expiration_time {
        text.push_str(&format!(", expires {expiry}"));
    }
    text.push(')');
    if let Some(summary) = &h.context.historical_data_summary {
        text.push_str(": ");
        text.push_str(summary);
    }
    text
}

/// The remote task's state (the ProtoJSON name) and its answer: the status message, else the
/// last agent message of the history, else the message the call returned.
pub fn answer_of(result: &Value) -> (String, Option<Value>) {
    if let Some(message) = result.get("message") {
        return ("TASK_STATE_COMPLETED".into(), Some(message.clone()));
    }
    let task = result.get("task").unwrap_or(result);
    let state = task
        .pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or("TASK_STATE_UNSPECIFIED")
        .to_owned();
    let message = task.pointer("/status/message").cloned().or_else(|| {
        task.get("history")?
            .as_array()?
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some("ROLE_AGENT"))
            .cloned()
    });
    (state, message)
}

/// True for a state the remote task stays in until someone acts: done, or waiting for input.
pub fn settled(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_COMPLETED"
            | "TASK_STATE_FAILED"
            | "TASK_STATE_CANCELED"
            | "TASK_STATE_REJECTED"
            | "TASK_STATE_INPUT_REQUIRED"
            | "TASK_STATE_AUTH_REQUIRED"
    )
}

/// True for a state in which the remote task waits for the next message of its client.
pub fn needs_input(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED"
    )
}

/// The chorus items for the remote answer to `input`, sent by `agent` in task `task_id`.
pub fn incoming(
    agent: &str,
    input: &Item,
    task_id: &str,
    state: &str,
    answer: Option<&Value>,
) -> Result<Vec<Item>, String> {
    let sender = input
        .sender()
        .ok_or("the input names no sender to answer")?
        .to_owned();
    if let Some(packet) = answer.and_then(carried_handoff) {
        let mut packet: HandoffMessage = serde_json::from_value(packet)
            .map_err(|e| format!("the handoff in the remote answer is not seed-003: {e}"))?;
        packet.metadata.sender_id = agent.to_owned();
        packet.metadata.recipient_id = chorus_core::handoff::Recipients::One(sender);
        packet.metadata.task_id = task_id.to_owned();
        return Ok(vec![Item::Handoff(packet)]);
    }
    let text = answer.map(text_of).unwrap_or_default();
    match input {
        Item::Message(_) => {
            let mut reply = answer
                .and_then(|a| A2a::decode(a.clone()).ok())
                .and_then(|c| c.messages.into_iter().next())
                .unwrap_or_else(|| Message::new(Role::Assistant, text.clone()));
            if matches!(reply.content, Nullable::Absent | Nullable::Null) {
                reply.content = Nullable::Value(Content::Text(text));
            }
            reply.role = Role::Assistant;
            reply.id = Some(new_message_id());
            reply.name = Some(agent.to_owned());
            reply.recipient = Some(sender);
            reply.extra.remove("x-a2a");
            Ok(vec![Item::Message(reply)])
        }
        Item::Handoff(earlier) => {
            let (status, blocked) = match state {
                "TASK_STATE_COMPLETED" => ("COMPLETED", false),
                "TASK_STATE_FAILED" | "TASK_STATE_CANCELED" | "TASK_STATE_REJECTED" => {
                    ("FAILED", false)
                }
                "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED" => ("BLOCKED", true),
                _ => ("IN_PROGRESS", false),
            };
            let mut data = Map::new();
            data.insert("status".into(), json!(status));
            if !text.is_empty() {
                data.insert("summary".into(), json!(text));
                if blocked {
                    data.insert("blocked_on".into(), json!(text));
                }
            }
            data.insert("in_response_to".into(), json!(earlier.metadata.message_id));
            let mut draft =
                PacketDraft::new(agent, sender, HandoffType::StatusUpdate, data, task_id);
            draft.priority = earlier.metadata.priority;
            draft.correlation_id = earlier.metadata.correlation_id.clone();
            draft.workflow_state = format!("A2A_{}", state.trim_start_matches("TASK_STATE_"));
            draft.previous_actions.push((
                "A2A_ANSWER".into(),
                format!("The remote A2A agent's task is {state}."),
            ));
            draft.continuing(earlier);
            let mut packet = draft.build().map_err(|e| e.to_string())?;
            packet.metadata.expiration_time = earlier.metadata.expiration_time.clone();
            Ok(vec![Item::Handoff(packet)])
        }
    }
}

/// A seed-003 packet in a data part of a message that declares the handoff extension.
fn carried_handoff(message: &Value) -> Option<Value> {
    let extended = message
        .get("extensions")?
        .as_array()?
        .iter()
        .any(|e| e.as_str() == Some(A2a::HANDOFF_EXTENSION));
    if !extended {
        return None;
    }
    message.get("parts")?.as_array()?.iter().find_map(|p| {
        let data = p.get("data")?;
        (data.get("metadata").is_some() && data.get("payload").is_some()).then(|| data.clone())
    })
}

/// The text parts of an A2A message, one per line (data parts as JSON).
fn text_of(message: &Value) -> String {
    let parts = message.get("parts").and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter_map(|p| match (p.get("text"), p.get("data")) {
            (Some(Value::String(t)), _) => Some(t.clone()),
            (_, Some(d)) => Some(d.to_string()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escalation() -> HandoffMessage {
        serde_json::from_value(json!({
            "metadata": {"message_id": "0b1b2c3d-e5f6-7890-1234-567890abcd01", "timestamp": "2026-01-01T10:00:00.000Z",
                "protocol_version": "1.0.0", "sender_id": "support", "recipient_id": "remote", "task_id": "t1",
                "priority": "CRITICAL", "expiration_time": "2099-01-01T00:00:00.000Z"},
            "context": {"workflow_state": "ESCALATED", "previous_actions": []},
            "payload": {"handoff_type": "ESCALATION", "data": {"issue_category": "NET", "severity": "CRITICAL",
                "customer_info": {"user_id": "u", "name": "N"}, "technical_details": {"symptoms": "s"}}},
            "instructions": {}}))
        .unwrap()
    }

    #[test]
    fn a_handoff_goes_whole_in_a_data_part_with_the_extension() {
        let out = outgoing(&Item::Handoff(escalation()), "t1");
        assert_eq!(out["extensions"][0], A2a::HANDOFF_EXTENSION);
        assert_eq!(out["parts"][1]["data"]["metadata"]["priority"], "CRITICAL");
        assert_eq!(
            (out["role"].as_str(), out["contextId"].as_str()),
            (Some("ROLE_USER"), Some("t1"))
        );
    }

    #[test]
    fn a_text_answer_to_a_handoff_is_a_status_update_with_its_priority_and_expiry() {
        let task = json!({"task": {"id": "r1", "status": {"state": "TASK_STATE_COMPLETED",
            "message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "fixed"}]}}}});
        let (state, answer) = answer_of(&task);
        let items = incoming(
            "remote",
            &Item::Handoff(escalation()),
            "t1",
            &state,
            answer.as_ref(),
        )
        .unwrap();
        let Item::Handoff(h) = &items[0] else {
            panic!("{items:?}")
        };
        assert_eq!(h.payload.handoff_type, HandoffType::StatusUpdate);
        assert_eq!(h.payload.data["status"], "COMPLETED");
        assert_eq!(h.payload.data["summary"], "fixed");
        assert_eq!(h.metadata.priority.as_str(), "CRITICAL");
        assert_eq!(
            h.metadata.expiration_time.as_deref(),
            Some("2099-01-01T00:00:00.000Z")
        );
        assert_eq!(h.metadata.recipient_id.ids(), ["support"]);
    }

    #[test]
    fn each_message_without_an_id_gets_its_own() {
        let m = Item::Message(Message::new(Role::User, "hi"));
        let (a, b) = (outgoing(&m, "t"), outgoing(&m, "t"));
        assert_ne!(a["messageId"], b["messageId"]);
        assert_eq!(a["parts"][0]["text"], "hi");
    }

    #[test]
    fn a_text_answer_to_a_message_is_a_reply() {
        let mut input = Message::new(Role::User, "hi");
        input.name = Some("front".into());
        let result = json!({"message": {"messageId": "a", "role": "ROLE_AGENT", "parts": [{"text": "hello"}]}});
        let (state, answer) = answer_of(&result);
        let items = incoming(
            "remote",
            &Item::Message(input),
            "t",
            &state,
            answer.as_ref(),
        )
        .unwrap();
        let Item::Message(m) = &items[0] else {
            panic!()
        };
        assert_eq!(
            (m.role, m.text(), m.recipient.as_deref()),
            (Role::Assistant, "hello".to_owned(), Some("front"))
        );
    }
}
