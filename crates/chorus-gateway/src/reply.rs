//! The model's reply, read token by token with the lenient Harmony parser and turned into what
//! Chat Completions sends: reasoning (the `analysis` channel), content (`final`, and
//! `commentary` without a recipient), and tool calls (a message to a recipient) with their
//! arguments.
//!
//! Deltas come out as tokens arrive; the finished reply is taken from the parser's messages,
//! which are authoritative (a repair can change what a header meant once the message ends), and
//! whatever the deltas did not yet carry is sent at the end. Stop strings cut the content at
//! their first occurrence; the tail that could be the start of one is held back until it cannot.

use chorus_harmony::{Diagnostic, Message, ParseOptions, Rank, Role, StreamParser, encoding};

const FUNCTIONS: &str = "functions.";

/// A piece of the reply to stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// Reasoning text.
    Reasoning(String),
    /// Answer text.
    Content(String),
    /// A tool call began.
    CallStart {
        /// Its place among the reply's calls.
        index: usize,
        /// Its id.
        id: String,
        /// The function.
        name: String,
    },
    /// More of a call's arguments.
    CallArguments {
        /// Its place among the reply's calls.
        index: usize,
        /// The new text.
        delta: String,
    },
}

/// A tool call of the reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `call_...`.
    pub id: String,
    /// The function (the recipient without `functions.`).
    pub name: String,
    /// The arguments as the model wrote them.
    pub arguments: String,
}

/// The finished reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The answer, if any.
    pub content: Option<String>,
    /// The reasoning, if any.
    pub reasoning: Option<String>,
    /// The tool calls.
    pub calls: Vec<Call>,
    /// The repairs the parser made, one line each (`token 3: MissingStart`).
    pub repairs: Vec<String>,
    /// The kinds of repair, for a header and a metric.
    pub repair_kinds: Vec<String>,
    /// Tokens the model generated.
    pub generated: usize,
    /// Of them, tokens of reasoning.
    pub reasoning_tokens: usize,
    /// A stop string ended the answer.
    pub stopped: bool,
    /// What the deltas had not carried yet.
    pub tail: Vec<Delta>,
}

/// The reply cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    /// Why.
    pub message: String,
    /// The generated text, special tokens written out.
    pub raw: String,
}

/// Reads one reply.
pub struct Reply {
    parser: StreamParser,
    stop: Vec<String>,
    hold: usize,
    generated: Vec<Rank>,
    reasoning_tokens: usize,
    content: String,
    sent_content: usize,
    sent_reasoning: String,
    calls: Vec<Call>,
    call_message: Option<usize>,
    stopped: bool,
}

impl Reply {
    /// A reader for a reply after `<|start|>assistant` and `opened` (a forced call's header),
    /// cutting the answer at the first of `stop`.
    pub fn new(opened: &[Rank], stop: Vec<String>) -> Self {
        let mut parser = StreamParser::new(Some(Role::Assistant), ParseOptions::LENIENT);
        for &token in opened {
            // The prompt's own tokens: a header the parser always accepts.
            let _ = parser.process(token);
        }
        let hold = stop
            .iter()
            .map(|s| s.len())
            .max()
            .unwrap_or(1)
            .saturating_sub(1);
        Reply {
            parser,
            stop,
            hold,
            generated: Vec::new(),
            reasoning_tokens: 0,
            content: String::new(),
            sent_content: 0,
            sent_reasoning: String::new(),
            calls: Vec::new(),
            call_message: None,
            stopped: false,
        }
    }

    /// A stop string ended the answer: read no more.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Reads one generated token; the deltas it makes go to `out`.
    pub fn token(&mut self, id: Rank, out: &mut Vec<Delta>) -> Result<(), Unreadable> {
        if self.stopped {
            return Ok(());
        }
        self.generated.push(id);
        if let Err(problem) = self.parser.process(id) {
            return Err(self.unreadable(problem.to_string()));
        }
        let index = self.parser.messages().len();
        let channel = self.parser.current_channel();
        if channel == Some("analysis") && self.parser.current_recipient().is_none() {
            self.reasoning_tokens += 1;
        }
        if let Some(recipient) = self.parser.current_recipient() {
            let name = recipient
                .strip_prefix(FUNCTIONS)
                .unwrap_or(recipient)
                .to_owned();
            if self.call_message != Some(index) {
                self.call_message = Some(index);
                let id = call_id();
                out.push(Delta::CallStart {
                    index: self.calls.len(),
                    id: id.clone(),
                    name: name.clone(),
                });
                self.calls.push(Call {
                    id,
                    name,
                    arguments: String::new(),
                });
            }
            if let Some(delta) = self.parser.last_content_delta().filter(|d| !d.is_empty()) {
                let call = self.calls.last_mut().expect("a call was announced");
                call.arguments.push_str(delta);
                out.push(Delta::CallArguments {
                    index: self.calls.len() - 1,
                    delta: delta.to_owned(),
                });
            }
        } else if let Some(delta) = self.parser.last_content_delta().filter(|d| !d.is_empty()) {
            if channel == Some("analysis") {
                self.sent_reasoning.push_str(delta);
                out.push(Delta::Reasoning(delta.to_owned()));
            } else {
                let delta = delta.to_owned();
                self.answer(&delta, out);
            }
        }
        Ok(())
    }

    /// Adds answer text, sending what can no longer be part of a stop string.
    fn answer(&mut self, delta: &str, out: &mut Vec<Delta>) {
        let from = self.content.len().saturating_sub(self.hold);
        self.content.push_str(delta);
        if let Some(at) = first_stop(&self.content, &self.stop, floor(&self.content, from)) {
            self.content.truncate(at);
            self.stopped = true;
            self.send_content(self.content.len(), out);
            return;
        }
        let ready = floor(&self.content, self.content.len().saturating_sub(self.hold));
        self.send_content(ready, out);
    }

    fn send_content(&mut self, upto: usize, out: &mut Vec<Delta>) {
        if upto > self.sent_content {
            out.push(Delta::Content(
                self.content[self.sent_content..upto].to_owned(),
            ));
            self.sent_content = upto;
        }
    }

    /// Ends the reply. `strict` turns any repair into an error.
    pub fn finish(self, strict: bool) -> Result<Finished, Unreadable> {
        let stopped = self.stopped;
        let output = match self.parser.clone().finish() {
            Ok(output) => output,
            Err(problem) => return Err(self.unreadable(problem.to_string())),
        };
        if strict && !output.diagnostics.is_empty() {
            let listed = describe(&output.diagnostics).join("; ");
            return Err(self.unreadable(format!(
                "the model's output needed repairs ({listed}) and --strict is set"
            )));
        }
        let mut whole = Whole::default();
        for message in output
            .messages
            .iter()
            .filter(|m| m.author.role == Role::Assistant)
        {
            whole.add(message);
        }
        if let Some(at) = first_stop(&whole.content, &self.stop, 0) {
            whole.content.truncate(at);
        }
        if stopped {
            // Read no further than the stop: what the deltas carried is the answer.
            whole.content = self.content.clone();
        }
        let mut tail = Vec::new();
        if let Some(rest) = whole.reasoning.strip_prefix(self.sent_reasoning.as_str())
            && !rest.is_empty()
        {
            tail.push(Delta::Reasoning(rest.to_owned()));
        }
        let sent = &self.content[..self.sent_content];
        if let Some(rest) = whole.content.strip_prefix(sent)
            && !rest.is_empty()
        {
            tail.push(Delta::Content(rest.to_owned()));
        }
        let mut calls = Vec::new();
        for (index, (name, arguments)) in whole.calls.into_iter().enumerate() {
            let call = match self.calls.get(index) {
                Some(streamed) if streamed.name == name => {
                    if let Some(rest) = arguments.strip_prefix(streamed.arguments.as_str())
                        && !rest.is_empty()
                    {
                        tail.push(Delta::CallArguments {
                            index,
                            delta: rest.to_owned(),
                        });
                    }
                    Call {
                        id: streamed.id.clone(),
                        name,
                        arguments,
                    }
                }
                _ => {
                    let id = call_id();
                    tail.push(Delta::CallStart {
                        index,
                        id: id.clone(),
                        name: name.clone(),
                    });
                    if !arguments.is_empty() {
                        tail.push(Delta::CallArguments {
                            index,
                            delta: arguments.clone(),
                        });
                    }
                    Call {
                        id,
                        name,
                        arguments,
                    }
                }
            };
            calls.push(call);
        }
        let repair_kinds = output.diagnostics.iter().map(kind_name).collect();
        Ok(Finished {
            content: (!whole.content.is_empty()).then_some(whole.content),
            reasoning: (!whole.reasoning.is_empty()).then_some(whole.reasoning),
            calls,
            repairs: describe(&output.diagnostics),
            repair_kinds,
            generated: self.generated.len(),
            reasoning_tokens: self.reasoning_tokens,
            stopped,
            tail,
        })
    }

    fn unreadable(&self, message: String) -> Unreadable {
        let raw = encoding()
            .decode_utf8(&self.generated)
            .unwrap_or_else(|_| format!("{:?}", self.generated));
        Unreadable { message, raw }
    }
}

/// The reply's parts, from its messages.
#[derive(Default)]
struct Whole {
    content: String,
    reasoning: String,
    calls: Vec<(String, String)>,
}

impl Whole {
    fn add(&mut self, message: &Message) {
        let text = message.text();
        match (&message.recipient, message.channel.as_deref()) {
            (Some(recipient), _) => {
                let name = recipient.strip_prefix(FUNCTIONS).unwrap_or(recipient);
                self.calls.push((name.to_owned(), text));
            }
            (None, Some("analysis")) => self.reasoning.push_str(&text),
            (None, _) => self.content.push_str(&text),
        }
    }
}

/// A new call id, as OpenAI writes them.
pub fn call_id() -> String {
    format!("call_{}", &uuid::Uuid::new_v4().simple().to_string()[..24])
}

fn describe(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics
        .iter()
        .map(|d| format!("token {}: {:?}", d.position, d.kind))
        .collect()
}

/// The kind of a repair without its details (`Header`, `MissingStart`).
fn kind_name(diagnostic: &Diagnostic) -> String {
    let full = format!("{:?}", diagnostic.kind);
    full.split(['(', ' ', '{'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// Where the first stop string starts, searching from byte `from`.
fn first_stop(text: &str, stop: &[String], from: usize) -> Option<usize> {
    stop.iter()
        .filter_map(|s| text[from..].find(s.as_str()).map(|at| from + at))
        .min()
}

/// The largest char boundary at or below `at`.
fn floor(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, stop: &[&str]) -> (Vec<Delta>, Finished) {
        let mut reply = Reply::new(&[], stop.iter().map(|s| s.to_string()).collect());
        let mut deltas = Vec::new();
        for id in encoding().encode_with_special_tokens(text) {
            reply.token(id, &mut deltas).unwrap();
            if reply.stopped() {
                break;
            }
        }
        let finished = reply.finish(false).unwrap();
        deltas.extend(finished.tail.clone());
        (deltas, finished)
    }

    fn joined(deltas: &[Delta], reasoning: bool) -> String {
        deltas
            .iter()
            .filter_map(|d| match d {
                Delta::Reasoning(t) if reasoning => Some(t.as_str()),
                Delta::Content(t) if !reasoning => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn channels_become_reasoning_content_and_calls() {
        let (deltas, done) = read(
            "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
            &[],
        );
        assert_eq!(done.reasoning.as_deref(), Some("Need the weather."));
        assert_eq!(done.content, None);
        assert_eq!(done.calls.len(), 1);
        assert_eq!(done.calls[0].name, "get_weather");
        assert_eq!(done.calls[0].arguments, "{\"city\":\"Paris\"}");
        assert!(done.reasoning_tokens > 0 && done.reasoning_tokens < done.generated);
        let args: String = deltas
            .iter()
            .filter_map(|d| match d {
                Delta::CallArguments { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, done.calls[0].arguments);
        assert_eq!(joined(&deltas, true), "Need the weather.");
        assert!(done.repairs.is_empty());
    }

    #[test]
    fn deltas_add_up_to_the_finished_reply_even_when_repaired() {
        // No header at all, then a garbage channel word: both repaired.
        for text in [
            "Just text, no header.",
            "<|channel|>finale<|message|>Hi there",
            "<|channel|>analysis<|message|>think<|end|>the answer",
            "<|channel|>final<|message|><|message|>doubled",
        ] {
            let (deltas, done) = read(text, &[]);
            assert_eq!(
                joined(&deltas, false),
                done.content.clone().unwrap_or_default(),
                "{text}"
            );
            assert_eq!(
                joined(&deltas, true),
                done.reasoning.clone().unwrap_or_default(),
                "{text}"
            );
            assert!(
                !done.content.clone().unwrap_or_default().contains("<|"),
                "{text}"
            );
        }
    }

    #[test]
    fn a_stop_string_cuts_the_answer_and_is_never_sent() {
        let (deltas, done) = read(
            "<|channel|>final<|message|>one, two, STOP, three",
            &["STOP"],
        );
        assert_eq!(done.content.as_deref(), Some("one, two, "));
        assert!(done.stopped);
        assert_eq!(joined(&deltas, false), "one, two, ");
        // Reasoning is not cut by a stop string.
        let (_, done) = read(
            "<|channel|>analysis<|message|>STOP<|end|><|start|>assistant<|channel|>final<|message|>ok",
            &["STOP"],
        );
        assert_eq!(done.content.as_deref(), Some("ok"));
        assert_eq!(done.reasoning.as_deref(), Some("STOP"));
    }

    #[test]
    fn strict_refuses_a_repaired_reply_with_its_raw_text() {
        let mut reply = Reply::new(&[], Vec::new());
        let mut out = Vec::new();
        for id in encoding().encode_with_special_tokens("no header here") {
            reply.token(id, &mut out).unwrap();
        }
        let error = reply.finish(true).unwrap_err();
        assert!(error.message.contains("--strict"), "{}", error.message);
        assert_eq!(error.raw, "no header here");
    }
}
