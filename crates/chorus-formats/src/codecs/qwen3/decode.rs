//! Qwen3 ChatML text → chorus: whole rendered conversations and bare completions.

use chorus_core::{Conversation, FunctionCall, Message, Nullable, Role, ToolCall, ToolDefinition};
use serde::Deserialize;
use serde_json::Map;
use serde_json::value::RawValue;

use super::{TOOLS_FOOTER, TOOLS_HEADER};
use crate::common::call_ids;
use crate::common::reasoning;
use chorus_core::Problem;

const START: &str = "<|im_start|>";
const END: &str = "<|im_end|>";

/// Parses rendered Qwen3 text. Tool calls are numbered `call_0`, `call_1`, … and tool results
/// answer the calls before them in order. A final open assistant turn is parsed as a completion;
/// an empty one (the generation prompt) is left out. Text without `<|im_start|>` is a completion.
pub fn conversation(text: &str) -> Result<Conversation, Problem> {
    if text.is_empty() {
        return Ok(Conversation::default());
    }
    if !text.contains(START) {
        let mut calls = 0;
        return Ok(Conversation {
            messages: vec![assistant(text, &mut calls)],
            ..Conversation::default()
        });
    }
    let mut conversation = Conversation::default();
    let mut calls_seen = 0;
    let mut pending: Vec<String> = Vec::new();
    let mut offset = text.find(START).unwrap_or(0);
    if offset > 0 {
        return Err(Problem::expected(
            "1:1",
            "`<|im_start|>`",
            format!("{:?}", &text[..offset.min(20)]),
        ));
    }
    while offset < text.len() {
        let at = format!("byte {offset}");
        let rest = text[offset..].strip_prefix(START).ok_or_else(|| {
            Problem::expected(
                &at,
                "`<|im_start|>`",
                format!("{:?}", head(&text[offset..])),
            )
        })?;
        let (role, body_start) = match rest.find(['\n', '<']) {
            Some(n) => (&rest[..n], n),
            None => (rest, rest.len()),
        };
        let after_role = &rest[body_start..];
        let (body, consumed, closed) = match after_role.find(END) {
            Some(n) => (&after_role[..n], n + END.len(), true),
            None => (after_role, after_role.len(), false),
        };
        offset += START.len() + body_start + consumed;
        if closed {
            if text[offset..].starts_with('\n') {
                offset += 1;
            } else if offset < text.len() {
                return Err(Problem::expected(
                    format!("byte {offset}"),
                    "a newline after `<|im_end|>`",
                    format!("{:?}", head(&text[offset..])),
                ));
            }
        }
        let body = body.strip_prefix('\n').unwrap_or(body);
        match role {
            "system" if conversation.messages.is_empty() && conversation.tools.is_none() => {
                system(body, &at, &mut conversation)?;
            }
            "system" => conversation.messages.push(Message::new(Role::System, body)),
            "user" => match tool_responses(
                after_role
                    .get(..after_role.len().min(consumed))
                    .unwrap_or(body),
                closed,
            ) {
                Some(results) => {
                    for result in results {
                        let mut m = Message::new(Role::Tool, result);
                        m.tool_call_id = pending.pop();
                        conversation.messages.push(m);
                    }
                }
                None => conversation.messages.push(Message::new(Role::User, body)),
            },
            "assistant" => {
                if !closed && (body.is_empty() || body == "<think>\n\n</think>\n\n") {
                    break;
                }
                let m = assistant(body, &mut calls_seen);
                pending = m.calls().iter().rev().map(|c| c.id.clone()).collect();
                conversation.messages.push(m);
            }
            other => {
                return Err(Problem::expected(
                    &at,
                    "a role of system, user or assistant",
                    format!("{other:?}"),
                ));
            }
        }
    }
    Ok(conversation)
}

fn head(text: &str) -> &str {
    let end = text.char_indices().nth(20).map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// The first system block: the system prompt and, when present, the tool list.
fn system(body: &str, at: &str, conversation: &mut Conversation) -> Result<(), Problem> {
    let Some(start) = body.find(TOOLS_HEADER) else {
        conversation.messages.push(Message::new(Role::System, body));
        return Ok(());
    };
    if start > 0 {
        let prompt = body[..start].strip_suffix("\n\n").unwrap_or(&body[..start]);
        conversation
            .messages
            .push(Message::new(Role::System, prompt));
    }
    let listed = &body[start + TOOLS_HEADER.len()..];
    let footer = TOOLS_FOOTER.trim_end_matches("<|im_end|>\n");
    let listed = listed
        .strip_suffix(footer)
        .ok_or_else(|| Problem::expected(at, "the Qwen3 tool list footer", "something else"))?;
    let mut tools = Vec::new();
    for line in listed.split('\n').filter(|l| !l.is_empty()) {
        let tool: ToolDefinition = serde_json::from_str(line).map_err(|e| {
            Problem::expected(
                at,
                "one JSON tool definition per line inside <tools>",
                e.to_string(),
            )
        })?;
        tools.push(tool);
    }
    conversation.tools = Some(tools);
    Ok(())
}

/// The results of a user block made only of `<tool_response>` elements.
fn tool_responses(block: &str, closed: bool) -> Option<Vec<String>> {
    let block = if closed {
        block.strip_suffix(END).unwrap_or(block)
    } else {
        block
    };
    let mut rest = block.strip_prefix("\n<tool_response>\n")?;
    let mut out = Vec::new();
    loop {
        let end = rest.find("\n</tool_response>")?;
        out.push(rest[..end].to_owned());
        rest = &rest[end + "\n</tool_response>".len()..];
        if rest.is_empty() {
            return Some(out);
        }
        rest = rest.strip_prefix("\n<tool_response>\n")?;
    }
}

#[derive(Deserialize)]
struct CallText<'a> {
    name: String,
    #[serde(borrow)]
    arguments: &'a RawValue,
}

/// An assistant turn or completion: `<think>` reasoning, content, then `<tool_call>` elements.
pub fn assistant(body: &str, calls_seen: &mut usize) -> Message {
    let body = body.strip_suffix(END).unwrap_or(body);
    let (reasoning, rest) = match body
        .strip_prefix("<think>\n")
        .and_then(|b| b.split_once("\n</think>\n\n"))
    {
        Some((reasoning, rest)) => (Some(reasoning), rest),
        None => match body.split_once("</think>") {
            Some((before, after)) => (
                Some(before.trim_start_matches("<think>").trim_matches('\n')),
                after.trim_start_matches('\n'),
            ),
            None => (None, body),
        },
    };
    let (content, calls) = split_calls(rest, calls_seen);
    let mut m = Message::new(Role::Assistant, content);
    if !calls.is_empty() {
        if content.is_empty() {
            m.content = Nullable::Null;
        }
        m.tool_calls = Nullable::Value(calls);
    }
    if let Some(reasoning) = reasoning.filter(|r| !r.is_empty()) {
        reasoning::prepend(&mut m, reasoning.to_owned());
    }
    m
}

/// Content before the first well-formed `<tool_call>`, and the calls that follow it.
fn split_calls<'a>(text: &'a str, calls_seen: &mut usize) -> (&'a str, Vec<ToolCall>) {
    let Some(first) = text.find("<tool_call>\n") else {
        return (text, Vec::new());
    };
    let mut calls = Vec::new();
    let mut rest = &text[first..];
    while let Some(inner) = rest.strip_prefix("<tool_call>\n") {
        let Some(end) = inner.find("\n</tool_call>") else {
            break;
        };
        let Ok(call) = serde_json::from_str::<CallText>(&inner[..end]) else {
            break;
        };
        calls.push(ToolCall {
            id: call_ids::numbered(*calls_seen + calls.len()),
            kind: Some("function".into()),
            function: FunctionCall {
                name: call.name,
                arguments: call.arguments.get().to_owned(),
                extra: Map::new(),
            },
            extra: Map::new(),
        });
        rest = &inner[end + "\n</tool_call>".len()..];
        rest = rest.strip_prefix('\n').unwrap_or(rest);
    }
    if calls.is_empty() || !rest.trim().is_empty() {
        return (text, Vec::new());
    }
    *calls_seen += calls.len();
    let content = &text[..first];
    (content.strip_suffix('\n').unwrap_or(content), calls)
}
