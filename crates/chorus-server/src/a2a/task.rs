//! A chorus task's timeline → an A2A v1.0 `Task`: its messages as history and the state they
//! imply (the delivery, the answers, a cancel).

use chorus_core::{Conversation, Message};
use chorus_formats::{A2a, Codec, EncodeOptions};
use serde_json::{Value, json};

use super::HANDOFF_EXTENSION;

/// The event type of the NOTIFICATION a `CancelTask` publishes into the task.
pub const CANCELED_EVENT: &str = "A2A_TASK_CANCELED";

/// An A2A task state (the ProtoJSON enum names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Stored, not yet taken by the recipient.
    Submitted,
    /// Taken, or answered with progress.
    Working,
    /// The recipient asked for information or approval (REQUEST_INFORMATION, APPROVAL_REQUEST).
    InputRequired,
    /// Answered: a STATUS_UPDATE with COMPLETED, or a plain reply.
    Completed,
    /// A STATUS_UPDATE with FAILED.
    Failed,
    /// Canceled by `CancelTask`.
    Canceled,
    /// Not taken: the client's latest message became a dead letter (delivered `max_deliver`
    /// times without an ack, given up by its handler, or expired) and nobody answered it.
    Rejected,
}

impl State {
    /// The ProtoJSON name, e.g. `TASK_STATE_WORKING`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Submitted => "TASK_STATE_SUBMITTED",
            State::Working => "TASK_STATE_WORKING",
            State::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            State::Completed => "TASK_STATE_COMPLETED",
            State::Failed => "TASK_STATE_FAILED",
            State::Canceled => "TASK_STATE_CANCELED",
            State::Rejected => "TASK_STATE_REJECTED",
        }
    }

    /// True for states no message changes any more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            State::Completed | State::Failed | State::Canceled | State::Rejected
        )
    }

    /// True where a stream ends: terminal, or waiting for the client.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self == State::InputRequired
    }
}

/// One stored message of the task: its sender and its document.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The sending agent.
    pub sender: Option<String>,
    /// The message id.
    pub id: String,
    /// The stored chorus message or handoff.
    pub document: Value,
}

/// A task as A2A sees it.
#[derive(Debug, Clone)]
pub struct TaskView {
    /// The task id.
    pub id: String,
    /// The context (conversation) id.
    pub context_id: String,
    /// Where it stands.
    pub state: State,
    /// Every message, oldest first, as A2A messages.
    pub history: Vec<Value>,
    /// The latest message of the answering side, if any.
    pub answer: Option<Value>,
    /// The inboxes the task's first message went to.
    pub opened_to: Vec<String>,
}

impl TaskView {
    /// Reads the timeline `entries` (publish order) of task `id`. Without an answer the state is
    /// `Submitted`; the caller turns it into `Working` once the recipient took the message.
    pub fn new(id: &str, context_id: &str, entries: &[Entry]) -> TaskView {
        let client = entries.first().and_then(|e| e.sender.clone());
        let mut state = State::Submitted;
        let mut history = Vec::new();
        let mut answer = None;
        for entry in entries {
            let from_client = entry.sender == client;
            let message = a2a_message(entry, from_client, id, context_id);
            let handoff_type = entry.document.pointer("/payload/handoff_type");
            state = match handoff_type.and_then(Value::as_str) {
                _ if state == State::Canceled => State::Canceled,
                Some("NOTIFICATION")
                    if entry.document.pointer("/payload/data/event_type")
                        == Some(&json!(CANCELED_EVENT)) =>
                {
                    State::Canceled
                }
                _ if from_client => State::Submitted,
                Some("REQUEST_INFORMATION" | "APPROVAL_REQUEST") => State::InputRequired,
                Some("STATUS_UPDATE") => {
                    match entry
                        .document
                        .pointer("/payload/data/status")
                        .and_then(Value::as_str)
                    {
                        Some("COMPLETED") => State::Completed,
                        Some("FAILED") => State::Failed,
                        _ => State::Working,
                    }
                }
                Some(_) => State::Working,
                None => State::Completed,
            };
            if !from_client {
                answer = Some(message.clone());
            }
            history.push(message);
        }
        TaskView {
            id: id.to_owned(),
            context_id: context_id.to_owned(),
            state,
            history,
            answer,
            opened_to: Vec::new(),
        }
    }

    /// Marks the task rejected because its latest client message became dead letter `letter`:
    /// the status message says why (the reason's kind and attempts; a handler's error text and
    /// the letter's id stay with the dead letter, which only an admin reads).
    pub fn reject(&mut self, letter: &chorus_bus::DeadLetter) {
        use chorus_bus::DeadReason;
        let why = match &letter.reason {
            DeadReason::MaxDeliver { attempts } => {
                format!("it was delivered {attempts} times and never acknowledged")
            }
            DeadReason::Failed { attempts, .. } => {
                format!("its handler failed on each of {attempts} deliveries and gave up")
            }
            DeadReason::Expired { .. } => "it expired before the recipient took it".to_owned(),
            DeadReason::Invalid { .. } => "it was refused as invalid".to_owned(),
            DeadReason::NoRoute => "no recipient could take it".to_owned(),
        };
        self.state = State::Rejected;
        self.answer = Some(json!({
            "messageId": format!("dead-letter-{}", letter.id),
            "role": "ROLE_AGENT",
            "taskId": self.id,
            "contextId": self.context_id,
            "parts": [{"text": format!("The task was not taken: {why}.")}],
            "metadata": {"chorus": {"reason": letter.reason.kind()}},
        }));
    }

    /// The status object (`state`, and the answering side's latest message).
    pub fn status(&self) -> Value {
        let mut status = json!({"state": self.state.as_str()});
        if let Some(answer) = &self.answer {
            status["message"] = answer.clone();
        }
        status
    }

    /// The A2A `Task`, with at most `history_length` of the latest messages (all when `None`).
    pub fn to_json(&self, history_length: Option<usize>) -> Value {
        let skip = history_length.map_or(0, |n| self.history.len().saturating_sub(n));
        json!({
            "id": self.id,
            "contextId": self.context_id,
            "status": self.status(),
            "history": self.history[skip..],
        })
    }

    /// The `statusUpdate` stream event of the current status.
    pub fn status_update(&self) -> Value {
        json!({"statusUpdate": {"taskId": self.id, "contextId": self.context_id, "status": self.status()}})
    }
}

/// One stored document as an A2A message: a handoff whole in a data part (with the extension),
/// a chorus message through the `a2a` codec.
fn a2a_message(entry: &Entry, from_client: bool, task: &str, context: &str) -> Value {
    let role = if from_client {
        "ROLE_USER"
    } else {
        "ROLE_AGENT"
    };
    let mut out = match entry
        .document
        .pointer("/payload/handoff_type")
        .and_then(Value::as_str)
    {
        Some(kind) => {
            let sender = entry.sender.as_deref().unwrap_or("?");
            let priority = entry
                .document
                .pointer("/metadata/priority")
                .and_then(Value::as_str)
                .unwrap_or("MEDIUM");
            json!({
                "messageId": entry.id,
                "role": role,
                "parts": [
                    {"text": format!("{kind} from {sender} (priority {priority})")},
                    {"data": entry.document, "mediaType": "application/json"}
                ],
                "extensions": [HANDOFF_EXTENSION],
            })
        }
        None => chorus_message(&entry.document)
            .unwrap_or_else(|| json!({"messageId": entry.id, "parts": [{"data": entry.document}]})),
    };
    out["role"] = json!(role);
    out["taskId"] = json!(task);
    out["contextId"] = json!(context);
    out
}

/// A chorus message encoded by the `a2a` codec (its losses stay in `metadata.chorus`).
fn chorus_message(document: &Value) -> Option<Value> {
    let message: Message = serde_json::from_value(document.clone()).ok()?;
    let conversation = Conversation {
        messages: vec![message],
        ..Conversation::default()
    };
    let encoded = A2a::encode(&conversation, &EncodeOptions::default()).ok()?;
    encoded.value.as_array()?.first().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(sender: &str, id: &str, document: Value) -> Entry {
        Entry {
            sender: Some(sender.into()),
            id: id.into(),
            document,
        }
    }

    fn handoff(kind: &str, data: Value) -> Value {
        json!({"metadata": {"message_id": "h", "priority": "HIGH"}, "payload": {"handoff_type": kind, "data": data}})
    }

    #[test]
    fn the_state_follows_the_answers() {
        let ask = entry("alice", "m1", json!({"role": "user", "content": "hi"}));
        let view = |entries: &[Entry]| TaskView::new("t", "c", entries).state;
        assert_eq!(view(std::slice::from_ref(&ask)), State::Submitted);
        let info = entry(
            "bob",
            "m2",
            handoff("REQUEST_INFORMATION", json!({"requested_info_keys": ["x"]})),
        );
        assert_eq!(view(&[ask.clone(), info.clone()]), State::InputRequired);
        let done = entry(
            "bob",
            "m3",
            handoff("STATUS_UPDATE", json!({"status": "COMPLETED"})),
        );
        assert_eq!(view(&[ask.clone(), info, done.clone()]), State::Completed);
        let reply = entry(
            "bob",
            "m4",
            json!({"role": "assistant", "content": "hello"}),
        );
        assert_eq!(view(&[ask.clone(), reply]), State::Completed);
        let cancel = entry(
            "alice",
            "m5",
            handoff(
                "NOTIFICATION",
                json!({"event_type": CANCELED_EVENT, "message": "x"}),
            ),
        );
        assert_eq!(view(&[ask, cancel, done]), State::Canceled);
    }

    #[test]
    fn history_holds_handoffs_whole_and_messages_encoded() {
        let entries = [
            entry(
                "alice",
                "m1",
                json!({"role": "user", "id": "m1", "content": "hi"}),
            ),
            entry(
                "bob",
                "m2",
                handoff("STATUS_UPDATE", json!({"status": "COMPLETED"})),
            ),
        ];
        let task = TaskView::new("t", "c", &entries).to_json(None);
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(task["history"][0]["parts"][0]["text"], "hi");
        assert_eq!(task["history"][0]["role"], "ROLE_USER");
        assert_eq!(
            task["history"][1]["parts"][1]["data"]["metadata"]["priority"],
            "HIGH"
        );
        assert_eq!(task["history"][1]["extensions"][0], HANDOFF_EXTENSION);
        assert_eq!(task["status"]["message"]["messageId"], "m2");
        let short = TaskView::new("t", "c", &entries).to_json(Some(1));
        assert_eq!(short["history"].as_array().unwrap().len(), 1);
    }
}
