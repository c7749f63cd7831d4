//! chorus → Anthropic Messages request JSON.

use chorus_core::{Content, Conversation, Message, Role, ToolDefinition};
use serde_json::{Map, Value, json};

use super::blocks::{blocks, text_block};
use super::citations::sendable;
use crate::Format;
use crate::common::arguments;
use crate::common::extras::{drop_all, for_target, merge_into};
use crate::common::fields::{Field, report_unsupported};
use crate::common::json::{child, item};
use crate::common::outgoing::{Pairing, unnamed};
use crate::common::params;
use crate::common::system::{self, Slot};
use crate::loss::{Losses, Policy};
use crate::options::EncodeOptions;

const ME: Format = Format::Anthropic;

/// The top-level `system` prompt, as loss reports name it.
const SYSTEM: Slot = Slot {
    developer: "developer message sent in the system prompt",
    moved: "system message moved into the top-level system prompt",
    merged: "system messages merged into one system prompt",
    no_content: "missing or null content is written as no blocks",
};

/// One Anthropic turn being built.
struct Turn {
    role: &'static str,
    text: Option<String>,
    blocks: Vec<Value>,
    ends_with_user_text: bool,
    extra: Map<String, Value>,
}

impl Turn {
    fn push(&mut self, blocks: Vec<Value>) {
        if let Some(text) = self.text.take() {
            self.blocks.push(json!({"type": "text", "text": text}));
        }
        self.blocks.extend(blocks);
    }

    fn into_value(self) -> Value {
        let mut out = Map::new();
        out.insert("role".into(), Value::String(self.role.into()));
        out.insert(
            "content".into(),
            match self.text {
                Some(text) => Value::String(text),
                None => Value::Array(self.blocks),
            },
        );
        out.extend(self.extra);
        Value::Object(out)
    }
}

/// Encodes a conversation as a Messages API request.
pub fn request(conversation: &Conversation, options: &EncodeOptions, losses: &mut Losses) -> Value {
    let messages = unnamed(conversation, Pairing::WithoutOrphans, options.names, losses);
    let mut system_messages: Vec<(usize, &Message)> = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    for (i, m) in &messages {
        let at = item("/messages", *i);
        fields(m, &at, losses);
        match m.role {
            Role::System | Role::Developer => {
                let (after_turns, after_system) = (!turns.is_empty(), !system_messages.is_empty());
                system::report(m, &at, after_turns, after_system, &SYSTEM, losses);
                drop_all(&m.extra, &at, "the Anthropic system prompt", losses);
                system_messages.push((*i, m));
            }
            Role::User | Role::Tool | Role::Assistant => turn(m, &at, &mut turns, losses),
        }
    }
    let mut out = Map::new();
    if !system_messages.is_empty() {
        out.insert("system".into(), system_value(&system_messages, losses));
    }
    out.insert(
        "messages".into(),
        Value::Array(turns.into_iter().map(Turn::into_value).collect()),
    );
    if let Some(tools) = &conversation.tools {
        let tools = tools
            .iter()
            .enumerate()
            .map(|(i, t)| tool(t, &item("/tools", i), losses))
            .collect();
        out.insert("tools".into(), Value::Array(tools));
    }
    merge_into(
        &mut out,
        &params::without(&conversation.extra),
        ME,
        "",
        losses,
    );
    params::write(ME, &conversation.extra, &mut out, losses);
    Value::Object(out)
}

/// Message fields Anthropic has no place for.
fn fields(m: &Message, at: &str, losses: &mut Losses) {
    report_unsupported(
        m,
        at,
        "Anthropic messages",
        &[
            Field::Name,
            Field::Id,
            Field::CreatedAt,
            Field::Channel,
            Field::Recipient,
        ],
        losses,
    );
    if let Some(metadata) = &m.metadata {
        let mut rest = metadata.clone();
        let citations = rest.citation_map.take();
        if rest != Default::default() {
            losses.push(
                child(at, "metadata"),
                Policy::Dropped,
                "Anthropic messages have no metadata",
            );
        }
        for (id, citation) in citations.iter().flatten() {
            if !sendable(citation) {
                let path = child(&child(&child(at, "metadata"), "citation_map"), id);
                losses.push(
                    path,
                    Policy::Dropped,
                    "not an Anthropic citation location; the anchor stays in the text",
                );
            }
        }
    }
}

fn turn(m: &Message, at: &str, turns: &mut Vec<Turn>, losses: &mut Losses) {
    let role = if m.role == Role::Assistant {
        "assistant"
    } else {
        "user"
    };
    let mut extra = for_target(&m.extra, ME, at, losses);
    let citations = m.metadata.as_ref().and_then(|md| md.citation_map.as_ref());
    let mut blocks = Vec::new();
    let mut text = None;
    let null_content = m.content.is_absent() || (m.content.is_null() && m.calls().is_empty());
    if null_content && (m.role != Role::Tool || !m.content.is_absent()) {
        losses.push(
            child(at, "content"),
            Policy::Downgraded,
            "missing or null content is written as an empty block list",
        );
    }
    if m.role == Role::Tool {
        blocks.push(tool_result(m, std::mem::take(&mut extra), at, losses));
    } else {
        match m.content() {
            Some(Content::Text(t)) if m.calls().is_empty() && citations.is_none() => {
                text = Some(t.clone())
            }
            Some(Content::Text(t)) => blocks.push(text_block(t, citations, Map::new())),
            Some(Content::Parts(parts)) => {
                if parts.is_empty() && !m.calls().is_empty() {
                    losses.push(
                        child(at, "content"),
                        Policy::Dropped,
                        "an empty part list next to tool calls is written as no content",
                    );
                }
                blocks = self::blocks(parts, m.role, citations, &child(at, "content"), losses);
            }
            None => {}
        }
        for (n, call) in m.calls().iter().enumerate() {
            blocks.push(tool_use(call, &format!("{at}/tool_calls/{n}"), losses));
        }
    }
    let is_result = m.role == Role::Tool;
    match turns.last_mut() {
        Some(last) if last.role == role => {
            if role == "assistant" || (last.ends_with_user_text && !is_result) {
                losses.push(
                    at,
                    Policy::Merged,
                    format!("merged into the previous {role} turn (Anthropic turns alternate)"),
                );
            }
            if blocks.is_empty() && text.is_none() && !is_result {
                losses.push(
                    at,
                    Policy::Dropped,
                    "a message without content joins the previous turn and does not come back",
                );
            }
            last.ends_with_user_text = !is_result;
            last.push(blocks);
            if let Some(t) = text {
                last.push(vec![json!({"type": "text", "text": t})]);
            }
            for (key, value) in extra {
                last.extra.entry(key).or_insert(value);
            }
        }
        _ => turns.push(Turn {
            role,
            text,
            blocks,
            ends_with_user_text: role == "user" && !is_result,
            extra,
        }),
    }
}

fn tool_use(call: &chorus_core::ToolCall, at: &str, losses: &mut Losses) -> Value {
    let input = arguments::as_object(call, at, losses);
    let mut block =
        json!({"type": "tool_use", "id": call.id, "name": call.function.name, "input": input});
    if let Value::Object(map) = &mut block {
        merge_into(map, &call.extra, ME, at, losses);
        drop_all(
            &call.function.extra,
            &format!("{at}/function"),
            "an Anthropic tool_use",
            losses,
        );
    }
    block
}

fn tool_result(m: &Message, extra: Map<String, Value>, at: &str, losses: &mut Losses) -> Value {
    let mut block = Map::new();
    block.insert("type".into(), "tool_result".into());
    block.insert(
        "tool_use_id".into(),
        Value::String(m.tool_call_id.clone().unwrap_or_default()),
    );
    match m.content() {
        Some(Content::Text(t)) => {
            block.insert("content".into(), Value::String(t.clone()));
        }
        Some(Content::Parts(parts)) => {
            block.insert(
                "content".into(),
                Value::Array(blocks(
                    parts,
                    Role::Tool,
                    None,
                    &child(at, "content"),
                    losses,
                )),
            );
        }
        None => {}
    }
    block.extend(extra);
    if super::holds_error(m) {
        block.entry("is_error").or_insert(Value::Bool(true));
    }
    Value::Object(block)
}

fn system_value(system: &[(usize, &Message)], losses: &mut Losses) -> Value {
    if let [(_, only)] = system
        && let Some(Content::Text(text)) = only.content()
    {
        return Value::String(text.clone());
    }
    let mut blocks = Vec::new();
    for (i, m) in system {
        let at = child(&item("/messages", *i), "content");
        match m.content() {
            Some(Content::Text(text)) => blocks.push(json!({"type": "text", "text": text})),
            Some(Content::Parts(parts)) => {
                for block in self::blocks(parts, Role::System, None, &at, losses) {
                    if block.get("type").is_some_and(|t| t == "text") {
                        blocks.push(block);
                    } else {
                        losses.push(
                            &at,
                            Policy::Dropped,
                            "the Anthropic system prompt takes text blocks only",
                        );
                    }
                }
            }
            None => {}
        }
    }
    Value::Array(blocks)
}

fn tool(tool: &ToolDefinition, at: &str, losses: &mut Losses) -> Value {
    let f = &tool.function;
    let mut out = Map::new();
    match tool.kind.as_deref() {
        None | Some("function") => {}
        Some(server) => {
            out.insert("type".into(), Value::String(server.into()));
        }
    }
    out.insert("name".into(), Value::String(f.name.clone()));
    if let Some(description) = &f.description {
        out.insert("description".into(), Value::String(description.clone()));
    }
    match &f.parameters {
        Some(parameters) => {
            out.insert("input_schema".into(), parameters.clone());
        }
        None => {
            losses.push(
                format!("{at}/function/parameters"),
                Policy::Downgraded,
                "an Anthropic tool needs an input schema; one for an empty object is sent",
            );
            out.insert("input_schema".into(), json!({"type": "object"}));
        }
    }
    if let Some(strict) = f.strict {
        out.insert("strict".into(), Value::Bool(strict));
    }
    drop_all(
        &f.extra,
        &child(at, "function"),
        "an Anthropic tool",
        losses,
    );
    merge_into(&mut out, &tool.extra, ME, at, losses);
    Value::Object(out)
}
