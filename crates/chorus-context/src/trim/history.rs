//! A history with cached per-message counts and its structure (pinned messages, call units,
//! turns), updated in O(1) per appended message so re-trimming never recounts.

use std::collections::HashMap;

use chorus_core::{Content, ContentPart, Message, Role, ToolDefinition};

use super::placeholder::strip_media;
use crate::count::TokenCounter;
use crate::data::has_data;
use crate::error::Result;

/// One cached message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Tokens of the message as it is.
    pub tokens: usize,
    /// Tokens with its media replaced by placeholders (equal when it has no media).
    pub stripped: usize,
    /// The unit (a message, or a tool call with all its results) it belongs to.
    pub unit: usize,
}

/// A unit: messages that are kept or dropped together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Unit {
    /// Message indexes, in order.
    pub members: Vec<usize>,
    /// Pinned units are never dropped (system, developer, data messages, and their units).
    pub pinned: bool,
    /// The turn it belongs to (`usize::MAX` for pinned units).
    pub turn: usize,
    /// Tokens of its messages.
    pub tokens: usize,
    /// Tokens saved by replacing its media with placeholders.
    pub saving: usize,
}

/// A turn: a user message and what follows it up to the next user message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Turn {
    /// Its non-pinned units, oldest first.
    pub units: Vec<usize>,
    /// Tokens of those units.
    pub tokens: usize,
    /// Tokens saved by replacing all their media.
    pub saving: usize,
}

/// Messages with everything the trimmer needs, cached.
#[derive(Clone)]
pub struct History {
    counter: TokenCounter,
    pub(crate) messages: Vec<Message>,
    pub(crate) entries: Vec<Entry>,
    pub(crate) units: Vec<Unit>,
    /// The turns, oldest first.
    pub(crate) turns: Vec<Turn>,
    /// Tokens of pinned units.
    pub(crate) pinned_tokens: usize,
    /// Which unit answers each tool-call id.
    call_units: HashMap<String, usize>,
    /// Tokens of the request outside the messages: reply priming and tool definitions.
    pub(crate) fixed: usize,
}

fn is_pinned(message: &Message) -> bool {
    matches!(message.role, Role::System | Role::Developer) || has_data(message)
}

fn has_media(message: &Message) -> bool {
    matches!(message.content(), Some(Content::Parts(parts))
        if parts.iter().any(|p| matches!(p, ContentPart::Image(_) | ContentPart::Audio(_))))
}

impl History {
    /// An empty history counted with `counter`, for a request offering `tools`.
    pub fn new(counter: TokenCounter, tools: &[ToolDefinition]) -> Result<Self> {
        let fixed = counter.reply_priming()? + counter.count_tools(tools)?;
        Ok(History {
            counter,
            messages: Vec::new(),
            entries: Vec::new(),
            units: Vec::new(),
            turns: Vec::new(),
            call_units: HashMap::new(),
            pinned_tokens: 0,
            fixed,
        })
    }

    /// A history holding `messages`.
    pub fn from_messages(
        counter: TokenCounter,
        tools: &[ToolDefinition],
        messages: &[Message],
    ) -> Result<Self> {
        let mut history = History::new(counter, tools)?;
        for message in messages {
            history.push(message.clone())?;
        }
        Ok(history)
    }

    /// The counter in use.
    pub fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    /// The messages, in order.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Tokens of the whole request as it stands.
    pub fn total(&self) -> usize {
        self.fixed + self.pinned_tokens + self.turns.iter().map(|t| t.tokens).sum::<usize>()
    }

    /// Reserves room for `additional` more messages, as `Vec::reserve` does.
    pub fn reserve(&mut self, additional: usize) {
        self.messages.reserve(additional);
        self.entries.reserve(additional);
        self.units.reserve(additional);
        self.turns.reserve(additional);
    }

    /// Appends a message, counting only it.
    pub fn push(&mut self, message: Message) -> Result<()> {
        let index = self.messages.len();
        let tokens = self.counter.count_message(&message, index)?.total();
        let stripped = if has_media(&message) {
            let (bare, _) = strip_media(&message, &self.counter, index)?;
            self.counter.count_message(&bare, index)?.total()
        } else {
            tokens
        };
        let pinned = is_pinned(&message);
        let answered = (message.role == Role::Tool)
            .then(|| {
                message
                    .tool_call_id
                    .as_ref()
                    .and_then(|id| self.call_units.get(id).copied())
            })
            .flatten();
        let unit = match answered {
            Some(unit) => unit,
            // A tool result whose call is not in the history stays with what precedes it.
            None if message.role == Role::Tool && !self.units.is_empty() => self.units.len() - 1,
            None => self.new_unit(&message),
        };
        if pinned && !self.units[unit].pinned {
            self.pin(unit);
        }
        for call in message.calls() {
            self.call_units.insert(call.id.clone(), unit);
        }
        let saving = tokens - stripped.min(tokens);
        let u = &mut self.units[unit];
        u.members.push(index);
        u.tokens += tokens;
        u.saving += saving;
        match self.turns.get_mut(u.turn) {
            Some(turn) if !u.pinned => {
                turn.tokens += tokens;
                turn.saving += saving;
            }
            _ => self.pinned_tokens += tokens,
        }
        self.entries.push(Entry {
            tokens,
            stripped,
            unit,
        });
        self.messages.push(message);
        Ok(())
    }

    fn new_unit(&mut self, message: &Message) -> usize {
        let id = self.units.len();
        let opens_turn = message.role == Role::User && !is_pinned(message);
        if opens_turn || self.turns.is_empty() {
            self.turns.push(Turn::default());
        }
        let turn = self.turns.len() - 1;
        self.turns[turn].units.push(id);
        self.units.push(Unit {
            turn,
            ..Unit::default()
        });
        id
    }

    fn pin(&mut self, unit: usize) {
        let u = &mut self.units[unit];
        if let Some(turn) = self.turns.get_mut(u.turn) {
            turn.units.retain(|&x| x != unit);
            turn.tokens -= u.tokens;
            turn.saving -= u.saving;
        }
        self.pinned_tokens += u.tokens;
        u.pinned = true;
        u.turn = usize::MAX;
    }
}
