//! Handoffs offered to a model as tools: `transfer_to_<agent>` and `reply_to_sender`.

use chorus_core::handoff::Instructions;
use chorus_core::{HandoffMessage, HandoffType, Priority, ToolDefinition};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::packet::{PacketDraft, PacketError};
use crate::tools::definition;

/// Prefix of the tools that hand the task to another agent.
pub(crate) const TRANSFER_PREFIX: &str = "transfer_to_";
/// The tool that answers the agent that sent the current handoff.
pub(crate) const REPLY_TOOL: &str = "reply_to_sender";

/// The arguments of a handoff tool.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TransferArgs {
    handoff_type: String,
    summary: String,
    #[serde(default)]
    data: Map<String, Value>,
    #[serde(default)]
    completed_steps: Vec<String>,
    #[serde(default)]
    constraints: Vec<String>,
    #[serde(default)]
    artifacts: Map<String, Value>,
    #[serde(default)]
    next_steps: Option<String>,
    #[serde(default)]
    priority: Option<Priority>,
}

fn parameters(types: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": {
            "handoff_type": {"type": "string", "enum": types},
            "summary": {"type": "string", "description": "Short summary of the conversation so far, for the receiver."},
            "data": {"type": "object", "description": "payload.data shaped for the handoff type (seed 003); e.g. ESCALATION needs issue_category, severity, customer_info {user_id, name}, technical_details."},
            "completed_steps": {"type": "array", "items": {"type": "string"}},
            "constraints": {"type": "array", "items": {"type": "string"}},
            "artifacts": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Shared assets by name: URLs or paths."},
            "next_steps": {"type": "string"},
            "priority": {"type": "string", "enum": ["LOW", "MEDIUM", "HIGH", "CRITICAL"]}
        },
        "required": ["handoff_type", "summary", "data"],
        "additionalProperties": false
    })
}

/// The `transfer_to_<agent>` tool definition.
pub(crate) fn transfer_tool(agent: &str) -> ToolDefinition {
    let types: Vec<&str> = HandoffType::STANDARD
        .iter()
        .map(HandoffType::as_str)
        .collect();
    definition(
        &format!("{TRANSFER_PREFIX}{agent}"),
        Some(&format!(
            "Hand the task to agent `{agent}` with a validated handoff packet."
        )),
        parameters(&types),
    )
}

/// The `reply_to_sender` tool definition (STATUS_UPDATE, REQUEST_INFORMATION, PROVIDE_INFORMATION).
pub(crate) fn reply_tool(sender: &str) -> ToolDefinition {
    definition(
        REPLY_TOOL,
        Some(&format!(
            "Answer `{sender}`, who handed you this task: report status, ask for information, or provide it."
        )),
        parameters(&[
            "STATUS_UPDATE",
            "REQUEST_INFORMATION",
            "PROVIDE_INFORMATION",
        ]),
    )
}

/// Builds and validates the packet a handoff tool call asks for; the error text is meant for the
/// model to repair its call.
pub(crate) fn packet_from_call(
    sender: &str,
    recipient: &str,
    arguments: &str,
    task_id: &str,
    correlation_id: Option<String>,
    earlier: Option<&HandoffMessage>,
) -> Result<HandoffMessage, String> {
    let args: TransferArgs = serde_json::from_str(arguments).map_err(|e| {
        format!("The handoff arguments are not valid: {e}. Hint: give handoff_type, summary and data as a JSON object.")
    })?;
    let handoff_type = HandoffType::parse(&args.handoff_type);
    let mut data = args.data;
    let mut instructions = Instructions {
        next_steps_suggestion: args.next_steps,
        ..Instructions::default()
    };
    if handoff_type == HandoffType::TaskTransfer {
        let put = |data: &mut Map<String, Value>, key: &str, value: Value, empty: bool| {
            if !empty && !data.contains_key(key) {
                data.insert(key.to_owned(), value);
            }
        };
        put(
            &mut data,
            "completed_steps",
            json!(args.completed_steps),
            args.completed_steps.is_empty(),
        );
        put(
            &mut data,
            "constraints",
            json!(args.constraints),
            args.constraints.is_empty(),
        );
        put(
            &mut data,
            "artifacts",
            Value::Object(args.artifacts.clone()),
            args.artifacts.is_empty(),
        );
    } else if !args.constraints.is_empty() {
        instructions.constraints = Some(Map::from_iter([(
            "rules".to_owned(),
            json!(args.constraints),
        )]));
    }
    let mut draft = PacketDraft::new(sender, recipient, handoff_type, data, task_id);
    draft.correlation_id = correlation_id;
    draft.priority = args.priority.unwrap_or(Priority::Medium);
    draft.summary = Some(args.summary);
    draft.previous_actions = args
        .completed_steps
        .into_iter()
        .map(|s| ("COMPLETED_STEP".to_owned(), s))
        .chain(args.artifacts.into_iter().map(|(name, v)| {
            (
                "ARTIFACT".to_owned(),
                format!(
                    "{name}: {}",
                    v.as_str().map_or(v.to_string(), str::to_owned)
                ),
            )
        }))
        .collect();
    draft.instructions = instructions;
    // The model writes the whole history summary itself (it reads the handoff it answers); the
    // earlier previous actions are carried as they were.
    if let Some(earlier) = earlier {
        draft.carry_actions(earlier);
    }
    draft.build().map_err(|e: PacketError| {
        let problems: Vec<String> = e.problems.iter().map(ToString::to_string).collect();
        format!(
            "The handoff packet does not validate: {}. Hint: fix `data` for handoff type {} and call again.",
            problems.join("; "),
            e.handoff_type
        )
    })
}
