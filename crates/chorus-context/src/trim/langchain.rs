//! A LangChain-compatible mode: the same parameters and results as langchain-core 1.8's
//! `trim_messages`, on chorus messages, with any token counter and text splitter as functions.
//!
//! Like LangChain, this mode may separate tool calls from their results; use the chorus strategy
//! when that matters.

use chorus_core::{Content, ContentPart, Message, Nullable, Role};

use crate::error::{ContextError, Result};

/// Which end to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Keep the first messages.
    First,
    /// Keep the last messages.
    Last,
}

/// LangChain message types: `human`, `ai`, `system` (system and developer) and `tool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    /// `human`: a user message.
    Human,
    /// `ai`: an assistant message.
    Ai,
    /// `system`: a system or developer message.
    System,
    /// `tool`: a tool result.
    Tool,
}

impl MessageType {
    /// Reads a LangChain type name or a chorus role name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "human" | "user" => Some(MessageType::Human),
            "ai" | "assistant" => Some(MessageType::Ai),
            "system" | "developer" => Some(MessageType::System),
            "tool" => Some(MessageType::Tool),
            _ => None,
        }
    }

    fn of(message: &Message) -> Self {
        match message.role {
            Role::User => MessageType::Human,
            Role::Assistant => MessageType::Ai,
            Role::System | Role::Developer => MessageType::System,
            Role::Tool => MessageType::Tool,
        }
    }
}

/// The parameters of `trim_messages` (the token counter and text splitter are passed apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LangChainOptions {
    /// Most tokens of the result.
    pub max_tokens: usize,
    /// `first` or `last`.
    pub strategy: Strategy,
    /// Whether a message may be cut.
    pub allow_partial: bool,
    /// With `last`: the result starts on one of these types.
    pub start_on: Vec<MessageType>,
    /// The result ends on one of these types.
    pub end_on: Vec<MessageType>,
    /// With `last`: keep a leading system message.
    pub include_system: bool,
}

/// A token counter over a list of messages.
pub type ListCounter<'a> = &'a dyn Fn(&[Message]) -> usize;
/// A text splitter; LangChain's default splits after each newline.
pub type Splitter<'a> = &'a dyn Fn(&str) -> Vec<String>;

/// LangChain's default splitter: pieces ending with `\n`, and the rest.
pub fn split_lines(text: &str) -> Vec<String> {
    let pieces: Vec<&str> = text.split('\n').collect();
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i < last {
                format!("{p}\n")
            } else {
                (*p).to_owned()
            }
        })
        .collect()
}

/// `trim_messages(messages, max_tokens, token_counter, strategy, allow_partial, end_on,
/// start_on, include_system, text_splitter)`.
pub fn trim_messages(
    messages: &[Message],
    options: &LangChainOptions,
    counter: ListCounter,
    splitter: Splitter,
) -> Result<Vec<Message>> {
    match options.strategy {
        Strategy::First => {
            if !options.start_on.is_empty() {
                return Err(ContextError::Parameters(
                    "start_on parameter is only valid with strategy='last'".into(),
                ));
            }
            if options.include_system {
                return Err(ContextError::Parameters(
                    "include_system parameter is only valid with strategy='last'".into(),
                ));
            }
            let partial = options.allow_partial.then_some(Strategy::First);
            Ok(first_max_tokens(
                messages.to_vec(),
                options.max_tokens,
                counter,
                splitter,
                partial,
                &options.end_on,
            ))
        }
        Strategy::Last => Ok(last_max_tokens(
            messages.to_vec(),
            options,
            counter,
            splitter,
        )),
    }
}

fn is_type(message: &Message, types: &[MessageType]) -> bool {
    types.contains(&MessageType::of(message))
}

fn first_max_tokens(
    mut messages: Vec<Message>,
    max_tokens: usize,
    counter: ListCounter,
    splitter: Splitter,
    partial: Option<Strategy>,
    end_on: &[MessageType],
) -> Vec<Message> {
    if messages.is_empty() {
        return messages;
    }
    if counter(&messages) <= max_tokens {
        if !end_on.is_empty() {
            while messages.last().is_some_and(|m| !is_type(m, end_on)) {
                messages.pop();
            }
        }
        return messages;
    }
    let (mut left, mut right) = (0usize, messages.len());
    for _ in 0..usize::BITS - messages.len().leading_zeros() {
        if left >= right {
            break;
        }
        let mid = (left + right).div_ceil(2);
        if counter(&messages[..mid]) <= max_tokens {
            left = mid;
        } else {
            right = mid - 1;
        }
    }
    let mut idx = left;
    if let Some(partial) = partial
        && idx < messages.len()
    {
        idx = include_partial(&mut messages, idx, max_tokens, counter, splitter, partial);
    }
    if !end_on.is_empty() {
        while idx > 0 && !is_type(&messages[idx - 1], end_on) {
            idx -= 1;
        }
    }
    messages.truncate(idx);
    messages
}

/// Tries to add part of `messages[idx]`: first whole content blocks, then split text.
fn include_partial(
    messages: &mut Vec<Message>,
    idx: usize,
    max_tokens: usize,
    counter: ListCounter,
    splitter: Splitter,
    partial: Strategy,
) -> usize {
    let mut excluded = messages[idx].clone();
    let with = |messages: &[Message], m: &Message| {
        let mut list = messages[..idx].to_vec();
        list.push(m.clone());
        counter(&list)
    };
    if let Some(Content::Parts(parts)) = excluded.content() {
        let mut blocks = parts.clone();
        if partial == Strategy::Last {
            blocks.reverse();
        }
        let total = blocks.len();
        for _ in 1..total {
            blocks.pop();
            excluded.content = Nullable::Value(Content::Parts(blocks.clone()));
            if with(messages, &excluded) <= max_tokens {
                if partial == Strategy::Last {
                    blocks.reverse();
                    excluded.content = Nullable::Value(Content::Parts(blocks));
                }
                messages.truncate(idx);
                messages.push(excluded);
                return idx + 1;
            }
        }
        excluded.content = Nullable::Value(Content::Parts(blocks));
    }
    let text = match excluded.content() {
        Some(Content::Text(text)) => Some(text.clone()),
        Some(Content::Parts(parts)) => parts.iter().find_map(|p| match p {
            ContentPart::Text(t) => Some(t.text.clone()),
            _ => None,
        }),
        None => None,
    };
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return idx;
    };
    let mut splits = splitter(&text);
    let base = counter(&messages[..idx]);
    if partial == Strategy::Last {
        splits.reverse();
    }
    let (mut left, mut right) = (0usize, splits.len());
    for _ in 0..usize::BITS - splits.len().leading_zeros() {
        if left >= right {
            break;
        }
        let mid = (left + right).div_ceil(2);
        excluded.content = Nullable::Value(Content::Text(splits[..mid].concat()));
        if base + counter(std::slice::from_ref(&excluded)) <= max_tokens {
            left = mid;
        } else {
            right = mid - 1;
        }
    }
    if left == 0 {
        return idx;
    }
    let mut kept = splits[..left].to_vec();
    if partial == Strategy::Last {
        kept.reverse();
    }
    excluded.content = Nullable::Value(Content::Text(kept.concat()));
    messages.truncate(idx);
    messages.push(excluded);
    idx + 1
}

fn last_max_tokens(
    mut messages: Vec<Message>,
    options: &LangChainOptions,
    counter: ListCounter,
    splitter: Splitter,
) -> Vec<Message> {
    if messages.is_empty() {
        return messages;
    }
    if !options.end_on.is_empty() {
        while messages
            .last()
            .is_some_and(|m| !is_type(m, &options.end_on))
        {
            messages.pop();
        }
    }
    let system = (options.include_system
        && messages
            .first()
            .is_some_and(|m| MessageType::of(m) == MessageType::System))
    .then(|| messages.remove(0));
    messages.reverse();
    let remaining = match &system {
        Some(s) => options
            .max_tokens
            .saturating_sub(counter(std::slice::from_ref(s))),
        None => options.max_tokens,
    };
    let partial = options.allow_partial.then_some(Strategy::Last);
    let mut result = first_max_tokens(
        messages,
        remaining,
        counter,
        splitter,
        partial,
        &options.start_on,
    );
    result.reverse();
    if let Some(system) = system {
        result.insert(0, system);
    }
    result
}
