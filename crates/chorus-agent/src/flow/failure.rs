//! `failure_handling_strategy` (seed 003): retries, then escalation and the fallback action.

use chorus_bus::AgentError;
use chorus_core::handoff::{NotificationData, PreviousAction};
use chorus_core::{HandoffMessage, HandoffType};
use serde_json::{Map, Value};

use crate::agents::{FlowAgent, Item, PacketDraft, handle_traced, new_message_id, now_timestamp};

/// Handles `input` with `agent`; when it fails on a handoff that carries a strategy, retries
/// `retry_count` times, then forwards the packet to `escalate_to` and tells the sender about
/// the `fallback_action`. Without a strategy (or with an empty one) the error stands.
pub async fn handle_with_strategy(
    agent: &dyn FlowAgent,
    input: &Item,
    task_id: &str,
) -> Result<Vec<Item>, AgentError> {
    let mut result = handle_traced(agent, input, task_id).await;
    let Item::Handoff(packet) = input else {
        return result;
    };
    let Some(strategy) = packet.instructions.failure_handling_strategy.clone() else {
        return result;
    };
    for _ in 0..strategy.retry_count.unwrap_or(0) {
        if result.is_ok() {
            return result;
        }
        result = handle_traced(agent, input, task_id).await;
    }
    match result {
        Ok(items) => Ok(items),
        Err(error) => give_up(agent.name(), packet, error),
    }
}

/// What `agent` sends when it gives up on `packet` (its retries spent): the packet forwarded to
/// the strategy's `escalate_to` and a notice of its `fallback_action` to the sender; `error`
/// itself when the packet names neither.
pub(crate) fn give_up(
    agent: &str,
    packet: &HandoffMessage,
    error: AgentError,
) -> Result<Vec<Item>, AgentError> {
    let Some(strategy) = packet.instructions.failure_handling_strategy.as_ref() else {
        return Err(error);
    };
    if strategy.escalate_to.is_none() && strategy.fallback_action.is_none() {
        return Err(error);
    }
    let mut out = Vec::new();
    if let Some(target) = &strategy.escalate_to {
        out.push(Item::Handoff(forward(packet, agent, target, &error)?));
    }
    if let Some(action) = &strategy.fallback_action {
        out.push(Item::Handoff(fallback_notice(
            packet, agent, action, &error,
        )?));
    }
    Ok(out)
}

fn forward(
    packet: &HandoffMessage,
    sender: &str,
    target: &str,
    error: &AgentError,
) -> Result<HandoffMessage, AgentError> {
    let mut next = packet.clone();
    next.metadata.message_id = new_message_id();
    next.metadata.timestamp = now_timestamp();
    next.metadata.sender_id = sender.to_owned();
    next.metadata.recipient_id = chorus_core::handoff::Recipients::One(target.to_owned());
    next.context.previous_actions.push(PreviousAction {
        action_type: "FAILED_ATTEMPT".into(),
        details: format!("{sender} could not complete the task: {}", error.message),
        timestamp: now_timestamp(),
        extra: Map::new(),
    });
    if let Some(s) = next.instructions.failure_handling_strategy.as_mut() {
        s.escalate_to = None;
        s.retry_count = None;
    }
    crate::agents::validate(&next).map_err(|e| AgentError::new(sender, e.to_string()))?;
    Ok(next)
}

fn fallback_notice(
    packet: &HandoffMessage,
    sender: &str,
    action: &str,
    error: &AgentError,
) -> Result<HandoffMessage, AgentError> {
    let data = NotificationData {
        event_type: "FALLBACK_ACTION".into(),
        message: format!(
            "{sender} failed ({}); fallback action: {action}",
            error.message
        ),
        details: Some(Map::from_iter([
            (
                "fallback_action".to_owned(),
                Value::String(action.to_owned()),
            ),
            (
                "in_response_to".to_owned(),
                Value::String(packet.metadata.message_id.clone()),
            ),
        ])),
    };
    let Ok(Value::Object(data)) = serde_json::to_value(data) else {
        return Err(AgentError::new(
            sender,
            "notification data is not an object",
        ));
    };
    let mut draft = PacketDraft::new(
        sender,
        &packet.metadata.sender_id,
        HandoffType::Notification,
        data,
        &packet.metadata.task_id,
    );
    draft.correlation_id = packet.metadata.correlation_id.clone();
    draft
        .build()
        .map_err(|e| AgentError::new(sender, e.to_string()))
}
