//! Chat Completions responses and streamed chunks → chorus assistant messages.

use chorus_core::{Conversation, CreatedAt, Metadata, TokenUsage};
use serde_json::{Map, Value, json};

use super::decode::message;
use crate::Format;
use crate::common::extras::stash;
use crate::common::json::{child, describe, item};
use crate::common::usage::{self, Keys};
use chorus_core::Problem;

/// Decodes a `chat.completion` object: one assistant message per choice, with usage, model and
/// finish reason in the message metadata; other top-level keys are kept in `extra` under
/// `x-openai-chat-response`, which only the `openai-chat-response` encoder writes back.
pub fn decode_response(value: Value) -> Result<Conversation, Problem> {
    let Value::Object(mut map) = value else {
        return Err(Problem::expected(
            "",
            "a chat.completion object",
            describe(&value),
        ));
    };
    let choices = match map.remove("choices") {
        Some(Value::Array(choices)) => choices,
        Some(other) => return Err(Problem::expected("/choices", "an array", describe(&other))),
        None => {
            return Err(Problem::expected(
                "/choices",
                "a field `choices`",
                "nothing",
            ));
        }
    };
    let id = map.remove("id").and_then(|v| v.as_str().map(str::to_owned));
    let created = map.remove("created").and_then(|v| v.as_i64());
    let model = map
        .remove("model")
        .and_then(|v| v.as_str().map(str::to_owned));
    let fingerprint = map
        .remove("system_fingerprint")
        .and_then(|v| v.as_str().map(str::to_owned));
    let usage = map.remove("usage").filter(|u| !u.is_null());
    let single = choices.len() == 1;
    let mut messages = Vec::with_capacity(choices.len());
    for (i, choice) in choices.into_iter().enumerate() {
        let at = item("/choices", i);
        let Value::Object(mut choice) = choice else {
            return Err(Problem::expected(at, "a choice object", "something else"));
        };
        let body = choice.remove("message").ok_or_else(|| {
            Problem::expected(child(&at, "message"), "a field `message`", "nothing")
        })?;
        let mut m = message(body, &child(&at, "message"))?;
        m.id = id.as_ref().map(|id| {
            if single {
                id.clone()
            } else {
                format!("{id}#{i}")
            }
        });
        m.created_at = created.map(CreatedAt::Unix);
        let mut metadata = Metadata {
            model_version: model.clone(),
            system_fingerprint: fingerprint.clone(),
            token_usage: usage.as_ref().map(token_usage),
            ..Metadata::default()
        };
        choice.remove("index");
        metadata.extra = choice;
        m.metadata = Some(metadata);
        messages.push(m);
    }
    // The rest (`object`, `service_tier`, ...) describes the response: it is written back only
    // into a response, never into a request.
    let mut extra = Map::new();
    stash(&mut extra, Format::OpenAiChatResponse, map);
    Ok(Conversation {
        messages,
        tools: None,
        extra,
    })
}

fn token_usage(usage: &Value) -> TokenUsage {
    let keys = Keys {
        prompt: "prompt_tokens",
        completion: "completion_tokens",
        total: Some("total_tokens"),
    };
    usage::read(usage.as_object().unwrap_or(&Map::new()), &keys)
}

/// Accumulates `chat.completion.chunk` objects into the response they stream.
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    head: Map<String, Value>,
    choices: Vec<ChoiceState>,
    usage: Option<Value>,
    chunks: usize,
}

#[derive(Debug, Default)]
struct ChoiceState {
    role: Option<String>,
    content: Option<String>,
    reasoning: Option<String>,
    calls: Vec<Map<String, Value>>,
    finish_reason: Option<Value>,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        StreamAccumulator::default()
    }

    /// Adds one chunk.
    pub fn push(&mut self, chunk: &Value) -> Result<(), Problem> {
        let at = format!("/{}", self.chunks);
        self.chunks += 1;
        let map = chunk
            .as_object()
            .ok_or_else(|| Problem::expected(&at, "a chunk object", describe(chunk)))?;
        for key in ["id", "created", "model", "system_fingerprint"] {
            if let Some(v) = map.get(key).filter(|v| !v.is_null()) {
                self.head.entry(key).or_insert_with(|| v.clone());
            }
        }
        if let Some(usage) = map.get("usage").filter(|u| !u.is_null()) {
            self.usage = Some(usage.clone());
        }
        let Some(choices) = map.get("choices").and_then(Value::as_array) else {
            return Ok(());
        };
        for (n, choice) in choices.iter().enumerate() {
            let index = choice.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
            if index > 1024 {
                return Err(Problem::expected(
                    format!("{at}/choices/{n}/index"),
                    "a choice index below 1024",
                    index.to_string(),
                ));
            }
            if self.choices.len() <= index {
                self.choices.resize_with(index + 1, ChoiceState::default);
            }
            let state = &mut self.choices[index];
            if let Some(reason) = choice.get("finish_reason").filter(|v| !v.is_null()) {
                state.finish_reason = Some(reason.clone());
            }
            if let Some(delta) = choice.get("delta") {
                state.apply(delta, &format!("{at}/choices/{n}/delta"))?;
            }
        }
        Ok(())
    }

    /// Adds every `data:` line of server-sent events text; `[DONE]` ends the stream.
    pub fn push_sse(&mut self, text: &str) -> Result<(), Problem> {
        for (line_no, line) in text.lines().enumerate() {
            let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                continue;
            };
            if data == "[DONE]" {
                break;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                Problem::expected(
                    format!("line {}", line_no + 1),
                    "a JSON chunk after `data:`",
                    e.to_string(),
                )
            })?;
            self.push(&chunk)?;
        }
        Ok(())
    }

    /// The streamed response as chorus messages.
    pub fn finish(self) -> Result<Conversation, Problem> {
        let mut response = self.head;
        let choices: Vec<Value> = self
            .choices
            .into_iter()
            .enumerate()
            .map(|(i, state)| state.into_choice(i))
            .collect();
        response.insert("choices".into(), Value::Array(choices));
        if let Some(usage) = self.usage {
            response.insert("usage".into(), usage);
        }
        decode_response(Value::Object(response))
    }
}

impl ChoiceState {
    fn apply(&mut self, delta: &Value, at: &str) -> Result<(), Problem> {
        if let Some(role) = delta.get("role").and_then(Value::as_str) {
            self.role = Some(role.to_owned());
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.content.get_or_insert_with(String::new).push_str(text);
        }
        if let Some(text) = delta.get("reasoning_content").and_then(Value::as_str) {
            self.reasoning
                .get_or_insert_with(String::new)
                .push_str(text);
        }
        let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) else {
            return Ok(());
        };
        for (n, call) in calls.iter().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(n as u64) as usize;
            if index > 1024 {
                return Err(Problem::expected(
                    format!("{at}/tool_calls/{n}/index"),
                    "a tool call index below 1024",
                    index.to_string(),
                ));
            }
            if self.calls.len() <= index {
                self.calls.resize_with(index + 1, Map::new);
            }
            let state = &mut self.calls[index];
            for key in ["id", "type"] {
                if let Some(v) = call.get(key).and_then(Value::as_str) {
                    state.insert(key.into(), Value::String(v.to_owned()));
                }
            }
            let function = state
                .entry("function")
                .or_insert_with(|| json!({"name": "", "arguments": ""}));
            for key in ["name", "arguments"] {
                if let Some(piece) = call
                    .pointer(&format!("/function/{key}"))
                    .and_then(Value::as_str)
                    && let Some(Value::String(s)) = function.get_mut(key)
                {
                    s.push_str(piece);
                }
            }
        }
        Ok(())
    }

    fn into_choice(self, index: usize) -> Value {
        let mut message = Map::new();
        message.insert(
            "role".into(),
            Value::String(self.role.unwrap_or_else(|| "assistant".into())),
        );
        message.insert(
            "content".into(),
            self.content.map(Value::String).unwrap_or(Value::Null),
        );
        if let Some(reasoning) = self.reasoning {
            message.insert("reasoning_content".into(), Value::String(reasoning));
        }
        if !self.calls.is_empty() {
            message.insert(
                "tool_calls".into(),
                Value::Array(self.calls.into_iter().map(Value::Object).collect()),
            );
        }
        json!({"index": index, "message": message, "finish_reason": self.finish_reason})
    }
}
