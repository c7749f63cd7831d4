//! The streaming parser: one token at a time, exposing the current header and content delta.
//!
//! Full parsing ([`crate::parse::parse`]) is this parser run to the end, so streamed messages
//! always equal parsed ones. Content bytes are decoded as UTF-8 as they arrive: a character
//! split across tokens comes out whole in the delta of the token that completes it.

use std::ops::Range;

use chorus_core::Problem;

use crate::encoding::encoding;
use crate::model::{Author, Content, Message, Role, TextContent};
use crate::parse::header::{self, Header, Repair};
use crate::parse::{Diagnostic, DiagnosticKind, ParseOptions, ParseOutput, token_place};
use crate::tokens::{self, Rank};

const REPLACEMENT: &str = "\u{FFFD}";

/// Where a [`StreamParser`] is: between messages, in a header, or in a message's content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Waiting for `<|start|>`.
    ExpectStart,
    /// Reading a header (up to `<|message|>`).
    Header,
    /// Reading content (up to a stop token).
    Content,
}

/// An incremental Harmony parser.
#[derive(Debug, Clone)]
pub struct StreamParser {
    options: ParseOptions,
    next_role: Option<Role>,
    state: State,
    position: usize,
    messages: Vec<Message>,
    diagnostics: Vec<Diagnostic>,
    header_tokens: Vec<Rank>,
    implicit_header: bool,
    header: Option<Header>,
    content: String,
    pending: Vec<u8>,
    broken: bool,
    delta: Option<Range<usize>>,
}

impl StreamParser {
    /// A parser; `role` is the role whose header the prompt already opened, if any.
    pub fn new(role: Option<Role>, options: ParseOptions) -> Self {
        Self {
            options,
            next_role: role,
            state: if role.is_some() {
                State::Header
            } else {
                State::ExpectStart
            },
            position: 0,
            messages: Vec::new(),
            diagnostics: Vec::new(),
            header_tokens: Vec::new(),
            implicit_header: false,
            header: None,
            content: String::new(),
            pending: Vec::new(),
            broken: false,
            delta: None,
        }
    }

    /// Feeds one token. In strict mode an error means the input is rejected; drop the parser.
    pub fn process(&mut self, token: Rank) -> Result<(), Problem> {
        let position = self.position;
        self.position += 1;
        self.delta = None;
        let lenient = self.options.lenient;
        match self.state {
            State::ExpectStart if token == tokens::START => self.begin_header(false),
            State::ExpectStart if !lenient => {
                let problem =
                    Problem::expected(token_place(position), "<|start|>", describe(token));
                return Err(if tokens::is_stop(token) {
                    problem.with_hint(
                        "a stop token ends a message; the next must begin with <|start|>",
                    )
                } else {
                    problem
                });
            }
            State::ExpectStart if tokens::is_stop(token) => {
                self.note(position, DiagnosticKind::StrayStop(token));
            }
            State::ExpectStart => {
                self.begin_header(true);
                self.header_tokens.push(token);
            }
            State::Header if token == tokens::MESSAGE => {
                if let Err(error) = self.open_content(position) {
                    // As the reference: a rejected header leaves the parser waiting for a
                    // `<|start|>`, with the messages read before it kept.
                    self.state = State::ExpectStart;
                    self.header_tokens.clear();
                    self.next_role = None;
                    return Err(error);
                }
            }
            State::Header if lenient && tokens::is_stop(token) => {
                self.close_header_without_message(position, DiagnosticKind::StopInHeader);
            }
            State::Header if lenient && token == tokens::START => {
                if !self.header_tokens.is_empty() {
                    self.close_header_without_message(position, DiagnosticKind::RestartedHeader);
                }
                self.begin_header(false);
            }
            State::Header => self.header_tokens.push(token),
            State::Content if lenient && token == tokens::CALL => {
                self.reread_role_as_recipient(position);
                self.finish_message();
            }
            State::Content if tokens::is_stop(token) => self.finish_message(),
            State::Content if lenient && token == tokens::MESSAGE && self.nothing_read() => {
                self.note(position, DiagnosticKind::RepeatedMessage);
            }
            State::Content if lenient && token == tokens::START => {
                self.note(position, DiagnosticKind::MissingEnd);
                self.finish_message();
                self.begin_header(false);
            }
            State::Content => self.append_content(position, token),
        }
        Ok(())
    }

    /// Ends the input and returns every message. Strict mode rejects input that ends in a header.
    pub fn finish(mut self) -> Result<ParseOutput, Problem> {
        self.process_eos()?;
        Ok(ParseOutput {
            messages: self.messages,
            diagnostics: self.diagnostics,
        })
    }

    /// Ends the input in place (the message being read is completed) and leaves the parser
    /// waiting for a new `<|start|>`. Strict mode rejects input that ends in a header.
    pub fn process_eos(&mut self) -> Result<(), Problem> {
        self.delta = None;
        match self.state {
            State::ExpectStart => {}
            State::Header if self.options.lenient => {
                if !self.header_tokens.is_empty()
                    || !self.implicit_header && self.next_role.is_none()
                {
                    self.close_header_without_message(self.position, DiagnosticKind::HeaderCutOff);
                }
            }
            State::Header => {
                return Err(Problem::expected(
                    token_place(self.position),
                    "<|message|> to end the header",
                    "the end of the input",
                ));
            }
            State::Content => self.finish_message(),
        }
        Ok(())
    }

    /// Where the parser is.
    pub fn state(&self) -> State {
        self.state
    }

    /// Messages completed so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Repairs made so far (lenient mode).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Number of tokens fed so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// The role of the message being read (or the role the prompt opened).
    pub fn current_role(&self) -> Option<Role> {
        match &self.header {
            Some(header) if self.state == State::Content => Some(header.author.role),
            _ => self.next_role,
        }
    }

    /// The author name of the message being read (tool messages).
    pub fn current_name(&self) -> Option<&str> {
        self.content_header().and_then(|h| h.author.name.as_deref())
    }

    /// The channel of the message being read, once its header is complete.
    pub fn current_channel(&self) -> Option<&str> {
        self.content_header().and_then(|h| h.channel.as_deref())
    }

    /// The recipient of the message being read, once its header is complete.
    pub fn current_recipient(&self) -> Option<&str> {
        self.content_header().and_then(|h| h.recipient.as_deref())
    }

    /// The content type of the message being read, once its header is complete.
    pub fn current_content_type(&self) -> Option<&str> {
        self.content_header()
            .and_then(|h| h.content_type.as_deref())
    }

    /// The decoded content of the message being read so far.
    pub fn current_content(&self) -> &str {
        if self.state == State::Content {
            &self.content
        } else {
            ""
        }
    }

    /// The text the last token added to the content (`None` while a character is incomplete).
    pub fn last_content_delta(&self) -> Option<&str> {
        self.delta.clone().map(|range| &self.content[range])
    }

    fn content_header(&self) -> Option<&Header> {
        self.header
            .as_ref()
            .filter(|_| self.state == State::Content)
    }

    fn note(&mut self, position: usize, kind: DiagnosticKind) {
        self.diagnostics.push(Diagnostic { position, kind });
    }

    fn begin_header(&mut self, implicit: bool) {
        self.state = State::Header;
        self.header_tokens.clear();
        self.implicit_header = implicit;
    }

    /// Decodes the header tokens; lenient mode replaces what is not UTF-8 or not a token.
    fn header_text(&mut self, position: usize) -> Result<String, Problem> {
        match encoding().decode_utf8(&self.header_tokens) {
            Ok(text) => Ok(text),
            Err(error) if !self.options.lenient => Err(Problem::expected(
                token_place(position),
                "a header that decodes to UTF-8 text",
                error,
            )),
            Err(_) => {
                self.note(position, DiagnosticKind::InvalidUtf8InHeader);
                let mut bytes = Vec::new();
                for &id in &self.header_tokens {
                    match encoding().token_bytes(id) {
                        Ok(b) => bytes.extend_from_slice(b),
                        Err(_) => bytes.extend_from_slice(REPLACEMENT.as_bytes()),
                    }
                }
                Ok(String::from_utf8_lossy(&bytes).into_owned())
            }
        }
    }

    /// The role to assume for a lenient header, and whether it looks like a header at all.
    fn lenient_role(&self, text: &str) -> (Option<Role>, bool) {
        if !self.implicit_header {
            return (self.next_role, true);
        }
        let first = text.split_whitespace().next().unwrap_or("");
        let written_role = first.split("<|").next().and_then(Role::from_name);
        let looks_like_header = written_role.is_some()
            || text.trim_start().starts_with("<|channel|>")
            || first.starts_with("to=");
        (
            if written_role.is_some() {
                None
            } else {
                Some(Role::Assistant)
            },
            looks_like_header,
        )
    }

    fn open_content(&mut self, position: usize) -> Result<(), Problem> {
        let text = self.header_text(position)?;
        let (header, leftover) = if self.options.lenient {
            if self.implicit_header {
                self.note(position, DiagnosticKind::MissingStart);
            }
            let (role, _) = self.lenient_role(&text);
            let (header, leftover, repairs) = header::lenient(&text, role, true);
            for repair in repairs {
                self.note(position, DiagnosticKind::Header(repair));
            }
            (header, leftover)
        } else {
            let header = header::strict(&text, self.next_role).map_err(|e| Problem {
                pointer: token_place(position),
                ..e
            })?;
            (header, String::new())
        };
        self.next_role = None;
        self.header_tokens.clear();
        self.header = Some(header);
        self.state = State::Content;
        self.content.clear();
        if !leftover.is_empty() {
            self.content.push_str(&leftover);
            self.content.push(' ');
        }
        self.pending.clear();
        self.broken = false;
        Ok(())
    }

    /// Lenient: a header that never reached `<|message|>` becomes a message of its own.
    fn close_header_without_message(&mut self, position: usize, kind: DiagnosticKind) {
        let text = self.header_text(position).unwrap_or_default();
        let (role, looks_like_header) = self.lenient_role(&text);
        let (header, content) = if looks_like_header {
            let (header, content, repairs) = header::lenient(&text, role, false);
            self.note(position, kind);
            for repair in repairs.into_iter().filter(|r| *r != Repair::MissingRole) {
                self.note(position, DiagnosticKind::Header(repair));
            }
            (header, content)
        } else {
            self.note(position, DiagnosticKind::StrayText);
            let author = Author {
                role: Role::Assistant,
                name: None,
            };
            (
                Header {
                    author,
                    recipient: None,
                    channel: None,
                    content_type: None,
                },
                text,
            )
        };
        self.messages.push(message(header, content));
        self.next_role = None;
        self.header_tokens.clear();
        self.state = State::ExpectStart;
    }

    fn append_content(&mut self, position: usize, token: Rank) {
        if self.broken {
            return;
        }
        let start = self.content.len();
        match encoding().token_bytes(token) {
            Err(_) if self.options.lenient => {
                self.note(position, DiagnosticKind::UnknownToken(token));
                self.content
                    .push_str(&String::from_utf8_lossy(&self.pending));
                self.pending.clear();
                self.content.push_str(REPLACEMENT);
            }
            Err(_) => self.broken = true,
            Ok(bytes) if self.pending.is_empty() => match std::str::from_utf8(bytes) {
                Ok(text) => self.content.push_str(text),
                Err(_) => {
                    self.pending.extend_from_slice(bytes);
                    self.decode_pending();
                }
            },
            Ok(bytes) => {
                self.pending.extend_from_slice(bytes);
                self.decode_pending();
            }
        }
        self.delta = (self.content.len() > start).then_some(start..self.content.len());
    }

    /// Moves the decodable prefix of the pending bytes into the content: one invalid sequence
    /// (as U+FFFD) per token at most, an incomplete character waits for the next token.
    fn decode_pending(&mut self) {
        match std::str::from_utf8(&self.pending) {
            Ok(text) => {
                self.content.push_str(text);
                self.pending.clear();
            }
            Err(error) => {
                let valid = error.valid_up_to();
                let text = std::str::from_utf8(&self.pending[..valid]).unwrap_or_default();
                self.content.push_str(text);
                let consumed = match error.error_len() {
                    Some(len) => {
                        self.content.push_str(REPLACEMENT);
                        valid + len
                    }
                    None => valid,
                };
                self.pending.drain(..consumed);
            }
        }
    }

    /// Whether the message being read has no content yet.
    fn nothing_read(&self) -> bool {
        self.content.is_empty() && self.pending.is_empty() && !self.broken
    }

    /// Lenient: a message that opened with a name instead of a role (read as a tool's output)
    /// but ends with `<|call|>` is the assistant calling that name.
    fn reread_role_as_recipient(&mut self, position: usize) {
        let Some(header) = self
            .header
            .as_mut()
            .filter(|h| h.author.role == Role::Tool && h.recipient.is_none())
        else {
            return;
        };
        let Some(name) = header.author.name.take() else {
            return;
        };
        header.author.role = Role::Assistant;
        header.recipient = Some(name.clone());
        self.note(
            position,
            DiagnosticKind::Header(Repair::RoleWasRecipient(name)),
        );
    }

    fn finish_message(&mut self) {
        if self.broken {
            self.content.push_str(REPLACEMENT);
        }
        self.content
            .push_str(&String::from_utf8_lossy(&self.pending));
        self.pending.clear();
        self.broken = false;
        self.delta = None;
        let header = self.header.take().unwrap_or(Header {
            author: Author {
                role: Role::Assistant,
                name: None,
            },
            recipient: None,
            channel: None,
            content_type: None,
        });
        let content = std::mem::take(&mut self.content);
        self.messages.push(message(header, content));
        self.state = State::ExpectStart;
    }
}

fn message(header: Header, text: String) -> Message {
    Message {
        author: header.author,
        recipient: header.recipient,
        content: vec![Content::Text(TextContent { text })],
        channel: header.channel,
        content_type: header.content_type,
    }
}

/// A token as shown in errors: its special name, its text, or its id.
fn describe(token: Rank) -> String {
    match tokens::special_name(token) {
        Some(name) => name,
        None => match encoding().token_bytes(token) {
            Ok(bytes) => format!("{:?} (token {token})", String::from_utf8_lossy(bytes)),
            Err(_) => format!("unknown token id {token}"),
        },
    }
}
