//! chorus → Qwen3 ChatML text, exactly as the Qwen3 chat template renders it.

use chorus_core::{Content, ContentPart, Conversation, Message, Nullable, Role};

use super::{TOOLS_FOOTER, TOOLS_HEADER};
use crate::common::call_ids;
use crate::common::extras::drop_all;
use crate::common::fields::{Field, report_unsupported};
use crate::common::json::{child, item};
use crate::common::media::data_as_text;
use crate::common::outgoing::{Pairing, unnamed};
use crate::common::pyjson::dumps;
use crate::loss::{Losses, Policy};
use crate::options::EncodeOptions;

/// A message as the template sees it: string content, optional reasoning, calls.
struct Flat {
    index: usize,
    role: Role,
    content: String,
    reasoning: Option<String>,
    calls: Vec<(String, String)>,
}

/// Renders the conversation; what the text cannot carry is reported.
pub fn render(conversation: &Conversation, options: &EncodeOptions, losses: &mut Losses) -> String {
    let named = unnamed(conversation, Pairing::Paired, options.names, losses);
    let mut calls_seen = 0;
    let mut messages: Vec<Flat> = Vec::with_capacity(named.len());
    for (index, m) in &named {
        messages.push(flatten(*index, m, &mut calls_seen, losses));
    }
    check_result_ids(&named, losses);
    drop_all(&conversation.extra, "", "Qwen3 text", losses);
    let tools = conversation.tools.as_deref().unwrap_or_default();
    if conversation.tools.as_ref().is_some_and(Vec::is_empty) {
        losses.push(
            "/tools",
            Policy::Dropped,
            "an empty tool list renders as no tools",
        );
    }
    let mut out = String::new();
    let first_is_system = messages.first().is_some_and(|m| m.role == Role::System);
    if !tools.is_empty() {
        out.push_str("<|im_start|>system\n");
        if first_is_system {
            out.push_str(&messages[0].content);
            out.push_str("\n\n");
        }
        out.push_str(TOOLS_HEADER);
        for tool in tools {
            out.push('\n');
            out.push_str(&dumps(&tool.as_given()));
        }
        out.push_str(TOOLS_FOOTER);
    } else if first_is_system {
        out.push_str("<|im_start|>system\n");
        out.push_str(&messages[0].content);
        out.push_str("<|im_end|>\n");
    }
    let last_query = last_query_index(&messages);
    let count = messages.len();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::User => block(&mut out, "user", &m.content),
            Role::System if i > 0 => block(&mut out, "system", &m.content),
            Role::Assistant => assistant(&mut out, m, i > last_query, i + 1 == count, losses),
            Role::Tool => {
                if i == 0 || messages[i - 1].role != Role::Tool {
                    out.push_str("<|im_start|>user");
                }
                out.push_str("\n<tool_response>\n");
                out.push_str(&m.content);
                out.push_str("\n</tool_response>");
                if i + 1 == count || messages[i + 1].role != Role::Tool {
                    out.push_str("<|im_end|>\n");
                }
            }
            Role::System | Role::Developer => {}
        }
    }
    if options.add_generation_prompt {
        out.push_str("<|im_start|>assistant\n");
        if options.enable_thinking == Some(false) {
            out.push_str("<think>\n\n</think>\n\n");
        }
    }
    out
}

fn block(out: &mut String, role: &str, content: &str) {
    out.push_str("<|im_start|>");
    out.push_str(role);
    out.push('\n');
    out.push_str(content);
    out.push_str("<|im_end|>\n");
}

/// The index of the last user message that is not a wrapped tool response.
fn last_query_index(messages: &[Flat]) -> usize {
    messages
        .iter()
        .rposition(|m| {
            m.role == Role::User
                && !(m.content.starts_with("<tool_response>")
                    && m.content.ends_with("</tool_response>"))
        })
        .unwrap_or(messages.len().saturating_sub(1))
}

fn assistant(out: &mut String, m: &Flat, after_query: bool, last: bool, losses: &mut Losses) {
    let (content, reasoning) = match &m.reasoning {
        Some(r) => (m.content.as_str(), r.as_str()),
        None => match m.content.split_once("</think>") {
            Some((before, _)) => {
                let after = m.content.rsplit("</think>").next().unwrap_or_default();
                let inside = before
                    .trim_end_matches('\n')
                    .rsplit("<think>")
                    .next()
                    .unwrap_or_default();
                (
                    after.trim_start_matches('\n'),
                    inside.trim_start_matches('\n'),
                )
            }
            None => (m.content.as_str(), ""),
        },
    };
    out.push_str("<|im_start|>assistant\n");
    if after_query && (last || !reasoning.is_empty()) {
        out.push_str("<think>\n");
        out.push_str(reasoning.trim_matches('\n'));
        out.push_str("\n</think>\n\n");
        out.push_str(content.trim_start_matches('\n'));
    } else {
        if m.reasoning.as_deref().is_some_and(|r| !r.is_empty()) {
            losses.push(
                format!("/messages/{}/content", m.index),
                Policy::Dropped,
                "the Qwen3 template leaves out reasoning of turns before the last user query",
            );
        }
        out.push_str(content);
    }
    for (n, (name, arguments)) in m.calls.iter().enumerate() {
        if n > 0 || !content.is_empty() {
            out.push('\n');
        }
        out.push_str("<tool_call>\n{\"name\": \"");
        out.push_str(name);
        out.push_str("\", \"arguments\": ");
        out.push_str(arguments);
        out.push_str("}\n</tool_call>");
    }
    out.push_str("<|im_end|>\n");
}

/// The template's view of one message, with what it cannot carry reported.
fn flatten(index: usize, m: &Message, calls_seen: &mut usize, losses: &mut Losses) -> Flat {
    let at = item("/messages", index);
    report_unsupported(
        m,
        &at,
        "Qwen3 messages",
        &[
            Field::Name,
            Field::Id,
            Field::CreatedAt,
            Field::Channel,
            Field::Recipient,
            Field::Metadata,
            Field::ToolCallId,
        ],
        losses,
    );
    drop_all(&m.extra, &at, "Qwen3 text", losses);
    if m.role == Role::Developer {
        losses.push(
            &at,
            Policy::Dropped,
            "the Qwen3 template renders no developer messages",
        );
        // It still counts in the template's message positions (first, last, neighbours).
        return Flat {
            index,
            role: Role::Developer,
            content: String::new(),
            reasoning: None,
            calls: Vec::new(),
        };
    }
    let mut content = String::new();
    let mut reasoning: Option<String> = None;
    match m.content() {
        Some(Content::Text(text)) => content.push_str(text),
        Some(Content::Parts(parts)) => {
            let mut texts = 0;
            for (i, part) in parts.iter().enumerate() {
                let part_at = item(&child(&at, "content"), i);
                match part {
                    ContentPart::Text(t) => {
                        texts += 1;
                        if texts > 1 {
                            losses.push(
                                &part_at,
                                Policy::Merged,
                                "text parts joined into one string",
                            );
                        }
                        if t.index.is_some() {
                            losses.push(
                                child(&part_at, "index"),
                                Policy::Dropped,
                                "Qwen3 text has no part index",
                            );
                        }
                        drop_all(&t.extra, &part_at, "Qwen3 text", losses);
                        content.push_str(&t.text);
                    }
                    ContentPart::Reasoning(r) if m.role == Role::Assistant && r.text.is_empty() => {
                        losses.push(
                            &part_at,
                            Policy::Dropped,
                            "an empty reasoning part renders as no think block",
                        );
                        // Like an empty `reasoning_content`: the content is not searched for
                        // `</think>`.
                        reasoning.get_or_insert_with(String::new);
                    }
                    ContentPart::Reasoning(r) if m.role == Role::Assistant => {
                        if reasoning.is_some() || texts > 0 {
                            losses.push(
                                &part_at,
                                Policy::Merged,
                                "reasoning parts joined into one think block before the content",
                            );
                        }
                        if r.signature.is_some() {
                            losses.push(
                                child(&part_at, "signature"),
                                Policy::Dropped,
                                "Qwen3 thinking has no signature",
                            );
                        }
                        drop_all(&r.extra, &part_at, "Qwen3 thinking", losses);
                        reasoning.get_or_insert_with(String::new).push_str(&r.text);
                    }
                    ContentPart::Data(d) => {
                        texts += 1;
                        content.push_str(&data_as_text(d, &part_at, losses));
                    }
                    other => losses.push(
                        part_at,
                        Policy::Dropped,
                        format!(
                            "the Qwen3 text template has no `{}` parts",
                            other.type_name()
                        ),
                    ),
                }
            }
            if texts == 0 {
                losses.push(
                    child(&at, "content"),
                    Policy::Downgraded,
                    "a part list without text renders as an empty string",
                );
            }
        }
        None => {
            if m.content.is_absent() || m.calls().is_empty() {
                losses.push(
                    child(&at, "content"),
                    Policy::Downgraded,
                    "missing content renders as an empty string",
                );
            }
        }
    }
    let mut calls = Vec::new();
    for (n, call) in m.calls().iter().enumerate() {
        let call_at = item(&child(&at, "tool_calls"), n);
        if call.id != call_ids::numbered(*calls_seen) {
            losses.push(
                child(&call_at, "id"),
                Policy::Dropped,
                format!(
                    "Qwen3 calls have no ids; parsing numbers them ({})",
                    call_ids::numbered(*calls_seen)
                ),
            );
        }
        if call.kind.as_deref() != Some("function") {
            losses.push(
                child(&call_at, "type"),
                Policy::Dropped,
                "Qwen3 calls are always functions",
            );
        }
        if serde_json::from_str::<serde_json::Value>(&call.function.arguments).is_err() {
            losses.push(
                format!("{}/function/arguments", call_at),
                Policy::Downgraded,
                "arguments are not JSON; the call will not parse back",
            );
        }
        drop_all(&call.extra, &call_at, "a Qwen3 call", losses);
        drop_all(
            &call.function.extra,
            &child(&call_at, "function"),
            "a Qwen3 call",
            losses,
        );
        *calls_seen += 1;
        calls.push((call.function.name.clone(), call.function.arguments.clone()));
    }
    if !calls.is_empty() && content.is_empty() && matches!(m.content, Nullable::Value(_)) {
        losses.push(
            child(&at, "content"),
            Policy::Downgraded,
            "empty content next to tool calls parses back as null",
        );
    }
    if m.tool_calls.is_null() || (!m.tool_calls.is_absent() && calls.is_empty()) {
        losses.push(
            child(&at, "tool_calls"),
            Policy::Dropped,
            "an empty or null tool call list renders as nothing",
        );
    }
    if m.role != Role::Assistant && !calls.is_empty() {
        losses.push(
            child(&at, "tool_calls"),
            Policy::Dropped,
            "the Qwen3 template renders calls only on assistant turns",
        );
        calls.clear();
    }
    Flat {
        index,
        role: m.role,
        content,
        reasoning,
        calls,
    }
}

/// Tool results are matched to calls by position when parsed; other ids are reported.
fn check_result_ids(messages: &[(usize, Message)], losses: &mut Losses) {
    let mut calls_seen = 0;
    let mut expected: Vec<String> = Vec::new();
    for (index, m) in messages {
        match m.role {
            Role::Assistant => {
                expected = (0..m.calls().len())
                    .rev()
                    .map(|n| call_ids::numbered(calls_seen + n))
                    .collect();
                calls_seen += m.calls().len();
            }
            Role::Tool => {
                let want = expected.pop();
                if m.tool_call_id != want {
                    losses.push(
                        format!("/messages/{index}/tool_call_id"),
                        Policy::Dropped,
                        "Qwen3 matches tool results to calls by position",
                    );
                }
            }
            _ => expected.clear(),
        }
    }
}
