//! The `invoke_agent` span (OpenTelemetry GenAI agent conventions) around one handled input.

use chorus_bus::AgentError;
use tracing::Instrument;

use super::{FlowAgent, Item};

/// Runs `agent.handle(input, task_id)` in an `invoke_agent {name}` span with
/// `gen_ai.agent.name`, the task id (also as `gen_ai.conversation.id`), the input's message id and, for a handoff, its type;
/// `error.type` is `agent_error` when the agent fails.
pub async fn handle_traced(
    agent: &dyn FlowAgent,
    input: &Item,
    task_id: &str,
) -> Result<Vec<Item>, AgentError> {
    let name = agent.name();
    let span = tracing::info_span!(
        "invoke_agent",
        otel.name = format!("invoke_agent {name}"),
        otel.kind = "internal",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = name,
        gen_ai.conversation.id = task_id,
        chorus.task_id = task_id,
        chorus.message.id = input.id(),
        chorus.handoff.type = input.handoff_type(),
        error.type = tracing::field::Empty,
    );
    let result = agent.handle(input, task_id).instrument(span.clone()).await;
    if result.is_err() {
        span.record("error.type", "agent_error");
    }
    result
}
