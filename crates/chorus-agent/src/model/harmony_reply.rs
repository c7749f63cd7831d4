//! Reading a Harmony reply as it streams: text or token ids in, chorus messages out.

use std::time::{Duration, Instant};

use chorus_core::{Message, Metadata};
use chorus_harmony::chorus_map::from_harmony;
use chorus_harmony::{CompletionTokens, Conversation, ParseOptions, Rank, Role, StreamParser};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::stamp::new_call_id;
use super::{ModelError, StreamEvent};

const FUNCTIONS: &str = "functions.";

/// Parses reply tokens by channel (lenient), sending stream events on the way.
pub(crate) struct ReplyReader<'a> {
    parser: StreamParser,
    tokens: CompletionTokens,
    generated: usize,
    events: Option<&'a UnboundedSender<StreamEvent>>,
    call_ids: Vec<String>,
    announced: Option<usize>,
    /// Time to the first generated token.
    pub ttft: Option<Duration>,
}

impl<'a> ReplyReader<'a> {
    /// A reader for a reply to a prompt that opened an assistant header.
    pub(crate) fn new(events: Option<&'a UnboundedSender<StreamEvent>>) -> Self {
        ReplyReader {
            parser: StreamParser::new(Some(Role::Assistant), ParseOptions::LENIENT),
            tokens: CompletionTokens::new(),
            generated: 0,
            events,
            call_ids: Vec::new(),
            announced: None,
            ttft: None,
        }
    }

    /// Reads one completions chunk (see [`CompletionTokens::chunk`]).
    pub(crate) fn chunk(&mut self, chunk: &Value, started: Instant) -> Result<(), ModelError> {
        let before = self.generated;
        let ids = self
            .tokens
            .chunk(chunk)
            .map_err(|e| ModelError::Protocol(e.to_string()))?;
        for id in ids {
            self.token(id)?;
        }
        if self.ttft.is_none() && self.generated > before {
            self.ttft = Some(started.elapsed());
        }
        Ok(())
    }

    fn token(&mut self, id: Rank) -> Result<(), ModelError> {
        self.generated += 1;
        self.parser
            .process(id)
            .map_err(|e| ModelError::Protocol(format!("unreadable Harmony reply: {e}")))?;
        let index = self.parser.messages().len();
        if let Some(recipient) = self.parser.current_recipient()
            && self.announced != Some(index)
        {
            self.announced = Some(index);
            let id = new_call_id();
            self.call_ids.push(id.clone());
            let name = recipient.strip_prefix(FUNCTIONS).unwrap_or(recipient);
            send(
                self.events,
                StreamEvent::ToolCall {
                    id,
                    name: name.to_owned(),
                },
            );
        } else if self.parser.current_recipient().is_none()
            && let Some(delta) = self.parser.last_content_delta()
        {
            send(
                self.events,
                StreamEvent::Text {
                    channel: self.parser.current_channel().map(str::to_owned),
                    delta: delta.to_owned(),
                },
            );
        }
        Ok(())
    }

    /// Ends the reply: the chorus messages, the number of generated tokens, and whether the
    /// reply calls tools.
    pub(crate) fn finish(mut self) -> Result<(Vec<Message>, usize, bool), ModelError> {
        for id in self.tokens.finish() {
            self.token(id)?;
        }
        let output = self
            .parser
            .finish()
            .map_err(|e| ModelError::Protocol(format!("unreadable Harmony reply: {e}")))?;
        for diagnostic in &output.diagnostics {
            tracing::debug!(?diagnostic, "Harmony reply repaired");
        }
        let assistant: Vec<_> = output
            .messages
            .into_iter()
            .filter(|m| m.author.role == Role::Assistant)
            .collect();
        if assistant.is_empty() {
            return Err(ModelError::Protocol(
                "the model produced no assistant message".into(),
            ));
        }
        let channels = closing_channels(&assistant);
        let mut messages = from_harmony(&Conversation {
            messages: assistant,
        })
        .messages;
        let mut ids = self.call_ids.into_iter();
        let mut calls = false;
        for (message, channel) in messages.iter_mut().zip(channels) {
            message.channel = channel;
            if let Some(list) = message.tool_calls.value_mut() {
                calls |= !list.is_empty();
                for call in list {
                    call.id = ids.next().unwrap_or_else(new_call_id);
                }
            }
        }
        if !output.diagnostics.is_empty()
            && let Some(last) = messages.last_mut()
        {
            let repairs: Vec<String> = output
                .diagnostics
                .iter()
                .map(|d| format!("token {}: {:?}", d.position, d.kind))
                .collect();
            let metadata = last.metadata.get_or_insert_with(Metadata::default);
            metadata
                .extra
                .insert("harmony_repairs".into(), json!(repairs));
        }
        Ok((messages, self.generated, calls))
    }
}

fn send(events: Option<&UnboundedSender<StreamEvent>>, event: StreamEvent) {
    if let Some(events) = events {
        let _ = events.send(event);
    }
}

/// The channel of the Harmony message that closes each chorus message from_harmony builds
/// (a message closes after `final`, and at the end).
fn closing_channels(messages: &[chorus_harmony::Message]) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut last = None;
    for message in messages {
        last = message.channel.clone();
        if last.as_deref() == Some("final") {
            out.push(last.take());
        }
    }
    if last.is_some()
        || messages
            .last()
            .is_some_and(|m| m.channel.as_deref() != Some("final"))
    {
        out.push(last);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_chunks_without_choices_are_read() {
        let started = Instant::now();
        let mut reader = ReplyReader::new(None);
        for piece in ["<|channel|>final<|message|>", "Hello", " world"] {
            reader
                .chunk(&json!({"content": piece, "stop": false}), started)
                .unwrap();
        }
        reader
            .chunk(&json!({"choices": [], "usage": {}}), started)
            .unwrap();
        let (messages, _, calls) = reader.finish().unwrap();
        assert!(!calls);
        assert_eq!(messages[0].text(), "Hello world");
        assert_eq!(messages[0].channel.as_deref(), Some("final"));
    }

    #[test]
    fn text_split_inside_special_tokens_parses_like_whole_text() {
        let reply = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}";
        let started = Instant::now();
        let mut reader = ReplyReader::new(None);
        let chars: Vec<char> = reply.chars().collect();
        for piece in chars.chunks(3) {
            let text: String = piece.iter().collect();
            reader
                .chunk(&json!({"choices": [{"text": text}]}), started)
                .unwrap();
        }
        let (messages, generated, calls) = reader.finish().unwrap();
        assert!(calls);
        assert!(generated > 10);
        assert_eq!(messages.len(), 1);
        let call = &messages[0].calls()[0];
        assert_eq!(call.function.name, "get_weather");
        assert_eq!(call.function.arguments, "{\"city\":\"Paris\"}");
        assert!(call.id.starts_with("call_"));
        assert_eq!(messages[0].channel.as_deref(), Some("commentary"));
    }
}
