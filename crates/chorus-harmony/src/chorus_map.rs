//! Mapping between chorus messages and Harmony conversations.
//!
//! chorus → Harmony ([`to_harmony`]):
//! - a system message (the given [`SystemContent`]) comes first;
//! - the text of every chorus `system` and `developer` message becomes the developer
//!   instructions (joined by blank lines, in order), and the conversation's tools become the
//!   `functions` namespace of that developer message;
//! - a user message becomes a user message;
//! - an assistant message becomes, in order: one `analysis` message per reasoning part; its text
//!   on its own channel if set, else on `commentary` when it also calls tools (a preamble) or on
//!   `final`; one `commentary` message per tool call, `to=functions.NAME`, content type
//!   `<|constrain|>json`, the arguments as content (rendered with `<|call|>`);
//! - a tool message becomes a message from `functions.NAME` to `assistant` on `commentary`,
//!   NAME being the function of the call it answers.
//!
//! Harmony has no call ids, so pairing follows one rule, used in both directions:
//! **a tool result answers the oldest unanswered call to the same function since the last
//! non-assistant, non-tool message.** To keep every pairing (parallel calls included), [`to_harmony`]
//! orders each run of consecutive tool results by the position of the call it answers. Calls
//! get ids `call_0`, `call_1`, ... (their order in the conversation) in [`from_harmony`].
//! What Harmony cannot carry (images, audio, files, data parts, call ids, message ids and
//! metadata, unanswered calls followed by answered calls to the same function) is reported as a
//! [`Omission`].
//!
//! Harmony → chorus ([`from_harmony`]): the system message is left out; developer instructions
//! become one chorus `developer` message and its `functions` become the conversation's tools;
//! consecutive assistant messages merge into one chorus assistant message (analysis → reasoning
//! parts, other text → text, calls → tool calls) that ends after a `final` message.

use std::collections::HashMap;

use chorus_core::{
    ContentPart, FunctionCall, FunctionDefinition, Nullable, ReasoningPart, TextPart, ToolCall,
    ToolDefinition,
};
use serde_json::Map;

use crate::model::{
    Content, Conversation, DeveloperContent, Message, ResponseFormat, Role, SystemContent,
    ToolDescription,
};

/// Something a chorus message held that the Harmony conversation cannot carry (named apart
/// from chorus-formats' `Loss`, which also says what the encoder did instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Omission {
    /// JSON pointer into the chorus conversation (`/messages/2/content/1`).
    pub pointer: String,
    /// What was left out.
    pub what: String,
}

/// A Harmony conversation and what the mapping left out.
#[derive(Debug, Clone, PartialEq)]
pub struct ToHarmony {
    /// The Harmony conversation.
    pub conversation: Conversation,
    /// What could not be carried.
    pub losses: Vec<Omission>,
}

const FUNCTIONS: &str = "functions.";

/// Maps a chorus conversation to Harmony, with `system` as its system message.
pub fn to_harmony(source: &chorus_core::Conversation, system: SystemContent) -> ToHarmony {
    let mut losses = Vec::new();
    let mut messages = vec![Message::new(Role::System, system)];
    let mut instructions = Vec::new();
    let calls = call_positions(&source.messages);
    let mut turn: Vec<Message> = Vec::new();
    let mut results: Vec<(usize, Message)> = Vec::new();
    for (index, message) in source.messages.iter().enumerate() {
        if message.role != chorus_core::Role::Tool {
            flush_results(&mut results, &mut turn);
        }
        if message.id.is_some() || message.metadata.is_some() {
            losses.push(loss(index, "", "message id and metadata"));
        }
        match message.role {
            chorus_core::Role::System | chorus_core::Role::Developer => {
                instructions.push(text_of(index, message, &mut losses));
            }
            chorus_core::Role::User => {
                let mut user = Message::new(Role::User, text_of(index, message, &mut losses));
                user.author.name = message.name.clone();
                turn.push(user);
            }
            chorus_core::Role::Assistant => {
                assistant_to_harmony(index, message, &mut turn, &mut losses)
            }
            chorus_core::Role::Tool => {
                let answered = message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| calls.get(id.as_str()));
                let (position, name) = match answered {
                    Some((position, name)) => (*position, name.clone()),
                    None => {
                        losses.push(loss(
                            index,
                            "/tool_call_id",
                            "a result that answers no known call",
                        ));
                        (
                            usize::MAX,
                            message.name.clone().unwrap_or_else(|| "unknown".into()),
                        )
                    }
                };
                let result = Message::from_tool(
                    format!("{FUNCTIONS}{name}"),
                    text_of(index, message, &mut losses),
                )
                .with_recipient("assistant")
                .with_channel("commentary");
                results.push((position, result));
            }
        }
    }
    flush_results(&mut results, &mut turn);
    let tools = source.tools.as_deref().unwrap_or_default();
    if !instructions.is_empty() || !tools.is_empty() {
        let mut developer = DeveloperContent {
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
            ..Default::default()
        };
        if !tools.is_empty() {
            developer = developer.with_function_tools(tools.iter().map(tool_description).collect());
        }
        messages.push(Message::new(Role::Developer, developer));
    }
    messages.extend(turn);
    report_ambiguous_pairings(&source.messages, &calls, &mut losses);
    ToHarmony {
        conversation: Conversation { messages },
        losses,
    }
}

/// Every call id → (its position among all calls, its function name).
fn call_positions(messages: &[chorus_core::Message]) -> HashMap<&str, (usize, String)> {
    messages
        .iter()
        .flat_map(|m| m.calls())
        .enumerate()
        .map(|(position, call)| (call.id.as_str(), (position, call.function.name.clone())))
        .collect()
}

/// Appends a run of tool results, ordered by the calls they answer.
fn flush_results(results: &mut Vec<(usize, Message)>, turn: &mut Vec<Message>) {
    results.sort_by_key(|(position, _)| *position);
    turn.extend(results.drain(..).map(|(_, message)| message));
}

fn assistant_to_harmony(
    index: usize,
    message: &chorus_core::Message,
    turn: &mut Vec<Message>,
    losses: &mut Vec<Omission>,
) {
    let mut text = String::new();
    for (part_index, part) in message.parts().iter().enumerate() {
        match part {
            ContentPart::Reasoning(reasoning) => {
                turn.push(
                    Message::new(Role::Assistant, reasoning.text.as_str()).with_channel("analysis"),
                );
            }
            ContentPart::Text(part) => text.push_str(&part.text),
            other => losses.push(loss(
                index,
                &format!("/content/{part_index}"),
                &format!("the {} part", other.type_name()),
            )),
        }
    }
    let calls = message.calls();
    if !text.is_empty() {
        let channel = message.channel.clone().unwrap_or_else(|| {
            if calls.is_empty() {
                "final"
            } else {
                "commentary"
            }
            .to_string()
        });
        turn.push(Message::new(Role::Assistant, text).with_channel(channel));
    }
    for call in calls {
        turn.push(
            Message::new(Role::Assistant, call.function.arguments.as_str())
                .with_channel("commentary")
                .with_recipient(format!("{FUNCTIONS}{}", call.function.name))
                .with_content_type("<|constrain|>json"),
        );
    }
}

fn text_of(index: usize, message: &chorus_core::Message, losses: &mut Vec<Omission>) -> String {
    let mut text = String::new();
    for (part_index, part) in message.parts().iter().enumerate() {
        match part.as_text() {
            Some(t) => text.push_str(t),
            None => losses.push(loss(
                index,
                &format!("/content/{part_index}"),
                &format!("the {} part", part.type_name()),
            )),
        }
    }
    text
}

fn loss(index: usize, field: &str, what: &str) -> Omission {
    Omission {
        pointer: format!("/messages/{index}{field}"),
        what: what.to_string(),
    }
}

fn tool_description(tool: &ToolDefinition) -> ToolDescription {
    ToolDescription {
        name: tool.function.name.clone(),
        description: tool.function.description.clone().unwrap_or_default(),
        parameters: tool.function.parameters.clone(),
    }
}

/// Reports calls that the pairing rule would pair wrongly: an unanswered call followed (in the
/// same turn) by an answered call to the same function.
fn report_ambiguous_pairings(
    messages: &[chorus_core::Message],
    calls: &HashMap<&str, (usize, String)>,
    losses: &mut Vec<Omission>,
) {
    let answered: Vec<&str> = messages
        .iter()
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    for (index, message) in messages.iter().enumerate() {
        for call in message
            .calls()
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
        {
            let later_answered = calls.iter().any(|(id, (position, name))| {
                *name == call.function.name
                    && answered.contains(id)
                    && *position > calls[call.id.as_str()].0
            });
            if later_answered {
                losses.push(loss(
                    index,
                    "/tool_calls",
                    "an unanswered call before an answered call to the same function",
                ));
            }
        }
    }
}

/// Offers `format` in the "# Response Formats" section of the developer message, adding a
/// developer message after the system message when there is none.
pub fn add_response_format(conversation: &mut Conversation, format: ResponseFormat) {
    let messages = &mut conversation.messages;
    let developer = messages
        .iter_mut()
        .filter(|m| m.author.role == Role::Developer)
        .flat_map(|m| m.content.iter_mut())
        .find_map(|c| match c {
            Content::DeveloperContent(d) => Some(d),
            _ => None,
        });
    match developer {
        Some(developer) => developer
            .response_formats
            .get_or_insert_with(Vec::new)
            .push(format),
        None => {
            let content = DeveloperContent {
                response_formats: Some(vec![format]),
                ..DeveloperContent::default()
            };
            let at = messages.len().min(1);
            messages.insert(at, Message::new(Role::Developer, content));
        }
    }
}

/// Maps a Harmony conversation to chorus messages and tools.
pub fn from_harmony(source: &Conversation) -> chorus_core::Conversation {
    let mut out = chorus_core::Conversation::default();
    let mut assistant: Option<chorus_core::Message> = None;
    let mut pending: HashMap<String, Vec<String>> = HashMap::new();
    let mut next_call = 0usize;
    for message in &source.messages {
        let role = message.author.role;
        if role != Role::Assistant {
            out.messages.extend(assistant.take());
        }
        if !matches!(role, Role::Assistant | Role::Tool) {
            pending.clear();
        }
        match role {
            Role::System => {}
            Role::Developer => developer_from_harmony(message, &mut out),
            Role::User => {
                let mut user = chorus_core::Message::new(chorus_core::Role::User, message.text());
                user.name = message.author.name.clone();
                out.messages.push(user);
            }
            Role::Tool => {
                let tool = message.author.name.clone().unwrap_or_default();
                let name = tool.strip_prefix(FUNCTIONS).unwrap_or(&tool).to_string();
                let mut result = chorus_core::Message::new(chorus_core::Role::Tool, message.text());
                result.tool_call_id = pending
                    .get_mut(&name)
                    .filter(|q| !q.is_empty())
                    .map(|q| q.remove(0));
                result.name = Some(name);
                out.messages.push(result);
            }
            Role::Assistant => {
                let current = assistant.get_or_insert_with(|| {
                    chorus_core::Message::with_parts(chorus_core::Role::Assistant, Vec::new())
                });
                let closes = assistant_from_harmony(message, current, &mut pending, &mut next_call);
                if closes {
                    out.messages.extend(assistant.take());
                }
            }
        }
    }
    out.messages.extend(assistant.take());
    out
}

/// Adds one Harmony assistant message to the chorus assistant message being built; returns
/// whether it closes that message (a `final` answer).
fn assistant_from_harmony(
    message: &Message,
    current: &mut chorus_core::Message,
    pending: &mut HashMap<String, Vec<String>>,
    next_call: &mut usize,
) -> bool {
    let text = message.text();
    if let Some(recipient) = &message.recipient {
        let name = recipient
            .strip_prefix(FUNCTIONS)
            .unwrap_or(recipient)
            .to_string();
        let id = format!("call_{next_call}");
        *next_call += 1;
        pending.entry(name.clone()).or_default().push(id.clone());
        let call = ToolCall {
            id,
            kind: Some("function".into()),
            function: FunctionCall {
                name,
                arguments: text,
                extra: Map::new(),
            },
            extra: Map::new(),
        };
        current.tool_calls.get_or_insert_with(Vec::new).push(call);
        return false;
    }
    let part = if message.channel.as_deref() == Some("analysis") {
        ContentPart::Reasoning(ReasoningPart {
            text,
            signature: None,
            extra: Map::new(),
        })
    } else {
        ContentPart::Text(TextPart {
            text,
            index: None,
            extra: Map::new(),
        })
    };
    if let Nullable::Value(chorus_core::Content::Parts(parts)) = &mut current.content {
        parts.push(part);
    }
    message.channel.as_deref() == Some("final")
}

fn developer_from_harmony(message: &Message, out: &mut chorus_core::Conversation) {
    for content in &message.content {
        let Content::DeveloperContent(developer) = content else {
            continue;
        };
        if let Some(instructions) = &developer.instructions {
            out.messages.push(chorus_core::Message::new(
                chorus_core::Role::Developer,
                instructions.as_str(),
            ));
        }
        let functions = developer
            .tools
            .as_ref()
            .and_then(|tools| tools.get("functions"));
        for tool in functions.map(|f| f.tools.as_slice()).unwrap_or_default() {
            out.tools.get_or_insert_with(Vec::new).push(ToolDefinition {
                kind: Some("function".into()),
                function: FunctionDefinition {
                    name: tool.name.clone(),
                    description: Some(tool.description.clone()),
                    parameters: tool.parameters.clone(),
                    strict: None,
                    extra: Map::new(),
                },
                extra: Map::new(),
                given: None,
            });
        }
    }
}
