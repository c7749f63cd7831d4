//! Parsing completion tokens into Harmony messages.
//!
//! Strict mode (the default) accepts and rejects exactly what openai-harmony 0.0.8 accepts and
//! rejects, and returns the same messages. Lenient mode recovers messy gpt-oss output, never
//! fails, never panics and never drops text: whatever it cannot place is kept as content and
//! reported as a [`Diagnostic`]. Both are the streaming parser ([`StreamParser`]) run to the end.

mod header;
pub(crate) mod stream;

use chorus_core::Problem;

use crate::model::{Message, Role};
use crate::tokens::Rank;
use stream::StreamParser;

pub use header::Repair;

/// How to parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ParseOptions {
    /// Recover from malformed output instead of rejecting it.
    pub lenient: bool,
}

impl ParseOptions {
    /// Strict parsing, as the reference.
    pub const STRICT: ParseOptions = ParseOptions { lenient: false };
    /// Lenient parsing.
    pub const LENIENT: ParseOptions = ParseOptions { lenient: true };
}

/// The place of a strict-parse problem: `token N` (the token count for the end of input).
pub(crate) fn token_place(position: usize) -> String {
    format!("token {position}")
}

/// What lenient parsing repaired, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Index of the token at which the problem was noticed.
    pub position: usize,
    /// What was repaired.
    pub kind: DiagnosticKind,
}

/// The kinds of repair lenient parsing makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// A header repair (channel, role, content type, unplaced words).
    Header(Repair),
    /// Output began without `<|start|>`; an assistant header was assumed.
    MissingStart,
    /// Text outside any message (e.g. after `<|call|>` or `<|end|>`), kept as an assistant message.
    StrayText,
    /// A stop token came before `<|message|>`; the header's trailing words became content.
    StopInHeader,
    /// The input ended inside a header.
    HeaderCutOff,
    /// A `<|start|>` inside a message ended it.
    MissingEnd,
    /// A second `<|message|>` right after the first was skipped.
    RepeatedMessage,
    /// A `<|start|>` inside a header discarded the header so far.
    RestartedHeader,
    /// A stop token outside any message was ignored.
    StrayStop(Rank),
    /// A token id outside the vocabulary became U+FFFD.
    UnknownToken(Rank),
    /// Header bytes that are not UTF-8 were replaced by U+FFFD.
    InvalidUtf8InHeader,
}

/// Parsed messages and, in lenient mode, the repairs made.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParseOutput {
    /// The messages in order.
    pub messages: Vec<Message>,
    /// The repairs made (always empty in strict mode).
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses `tokens`. `role` is the role whose header the prompt already opened (`Some(Assistant)`
/// after a completion prompt); with `None` the tokens start with `<|start|>`.
pub fn parse(
    tokens: &[Rank],
    role: Option<Role>,
    options: ParseOptions,
) -> Result<ParseOutput, Problem> {
    let mut parser = StreamParser::new(role, options);
    for &token in tokens {
        parser.process(token)?;
    }
    parser.finish()
}
