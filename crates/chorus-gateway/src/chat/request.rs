//! A Chat Completions request, checked field by field and read into what the prompt needs.
//!
//! Every field OpenAI defines is either carried (mapped to Harmony or sent to the upstream),
//! accepted and ignored for a stated reason, or refused with a 400 naming it; an unknown field
//! is refused as OpenAI refuses it.

use chorus_formats::{Codec, OpenAiChat};
use chorus_harmony::ResponseFormat;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
pub use crate::fields::ChatRequest;
use crate::fields::{effort, expected, structured_format, text_only, whole_number};

/// Fields sent to the upstream's completions request as they are.
const SAMPLING: [&str; 6] = [
    "temperature",
    "top_p",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "max_tokens",
];

/// The most choices (`n`) a request may ask for: each is a generation of its own upstream.
pub const MAX_CHOICES: u64 = 8;

/// Fields accepted and not used: they change nothing a raw completions engine does.
const IGNORED: [&str; 6] = [
    "user",
    "metadata",
    "store",
    "parallel_tool_calls",
    "service_tier",
    "safety_identifier",
];

/// Reads and checks a request body.
pub fn read(body: Value) -> Result<ChatRequest, ApiError> {
    let Value::Object(mut map) = body else {
        return Err(ApiError::invalid(
            "",
            "invalid_type",
            "the request body must be a JSON object",
        ));
    };
    let model = match map.remove("model") {
        Some(Value::String(model)) if !model.is_empty() => model,
        Some(other) => return Err(expected("/model", "a model name", &other)),
        None => {
            return Err(ApiError::invalid(
                "/model",
                "missing_required_parameter",
                "`model` is required",
            ));
        }
    };
    let messages = map.remove("messages").ok_or_else(|| {
        ApiError::invalid(
            "/messages",
            "missing_required_parameter",
            "`messages` is required",
        )
    })?;
    let mut messages = match messages {
        Value::Array(items) if !items.is_empty() => items,
        other => {
            return Err(expected(
                "/messages",
                "a non-empty array of messages",
                &other,
            ));
        }
    };
    for (index, message) in messages.iter_mut().enumerate() {
        reasoning_field(message, index)?;
    }
    let mut tools = map.remove("tools");
    let mut forced_tool = None;
    match map.remove("tool_choice") {
        None | Some(Value::Null) => {}
        Some(Value::String(choice)) => match choice.as_str() {
            "auto" => {}
            "none" => tools = None,
            "required" => {
                return Err(ApiError::unsupported(
                    "/tool_choice",
                    "`tool_choice: \"required\"` cannot be enforced on a raw completions engine (it needs a grammar over every tool's call); name one function instead, or use \"auto\"",
                ));
            }
            other => {
                return Err(ApiError::invalid(
                    "/tool_choice",
                    "invalid_value",
                    format!("`tool_choice` {other:?} is not auto, none, required or a function"),
                ));
            }
        },
        Some(choice) => {
            let name = choice
                .pointer("/function/name")
                .and_then(Value::as_str)
                .filter(|_| choice.get("type").and_then(Value::as_str) == Some("function"));
            let Some(name) = name else {
                return Err(expected(
                    "/tool_choice",
                    "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                    &choice,
                ));
            };
            let declared = tools
                .as_ref()
                .and_then(Value::as_array)
                .is_some_and(|tools| {
                    tools
                        .iter()
                        .any(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(name))
                });
            if !declared {
                return Err(ApiError::invalid(
                    "/tool_choice/function/name",
                    "invalid_value",
                    format!("`tool_choice` names {name:?}, which is not among the tools"),
                ));
            }
            forced_tool = Some(name.to_owned());
        }
    }
    let mut document = json!({ "messages": messages });
    if let Some(tools) = tools {
        check_tools(&tools)?;
        document["tools"] = tools;
    }
    let conversation = OpenAiChat::decode(document).map_err(|p| ApiError::from_problem("", &p))?;
    text_only(&conversation)?;
    let effort = match map.remove("reasoning_effort") {
        None => None,
        Some(value) => effort(&value, "/reasoning_effort")?,
    };
    let response_format = match map.remove("response_format") {
        None | Some(Value::Null) => None,
        Some(format) => response_format(format)?,
    };
    let stop = match map.remove("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(stop)) => vec![stop],
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) if !s.is_empty() => Ok(s),
                other => Err(expected(
                    &format!("/stop/{i}"),
                    "a non-empty string",
                    &other,
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(expected("/stop", "a string or an array of strings", &other)),
    };
    let stream = match map.remove("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(expected("/stream", "true or false", &other)),
    };
    let include_usage = match map.remove("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(options)) => match options.get("include_usage") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(expected(
                    "/stream_options/include_usage",
                    "true or false",
                    other,
                ));
            }
        },
        Some(other) => return Err(expected("/stream_options", "an object", &other)),
    };
    let mut sampling = Map::new();
    if let Some(n) = map.remove("max_completion_tokens").filter(|v| !v.is_null()) {
        sampling.insert(
            "max_tokens".into(),
            whole_number("/max_completion_tokens", n)?,
        );
    }
    for key in SAMPLING {
        if let Some(value) = map.remove(key).filter(|v| !v.is_null()) {
            let pointer = format!("/{key}");
            let value = match key {
                "seed" | "max_tokens" => whole_number(&pointer, value)?,
                _ if value.is_number() => value,
                _ => return Err(expected(&pointer, "a number", &value)),
            };
            sampling.entry(key).or_insert(value);
        }
    }
    let choices = match map.remove("n") {
        None | Some(Value::Null) => 1,
        Some(n) => match n.as_u64() {
            Some(n @ 1..=MAX_CHOICES) => n as usize,
            _ => {
                return Err(ApiError::invalid(
                    "/n",
                    "invalid_value",
                    format!(
                        "`n` must be a whole number from 1 to {MAX_CHOICES} (each choice is one request to the engine), found {n}"
                    ),
                ));
            }
        },
    };
    match map.remove("logprobs") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(_) => {
            return Err(ApiError::unsupported(
                "/logprobs",
                "log probabilities are not read back from the upstream",
            ));
        }
    }
    for key in IGNORED {
        map.remove(key);
    }
    if let Some((key, _)) = map.into_iter().next() {
        let refused = [
            (
                "top_logprobs",
                "log probabilities are not read back from the upstream",
            ),
            ("logit_bias", "token biases are not carried to the upstream"),
            ("modalities", "gpt-oss answers text only"),
            ("audio", "gpt-oss answers text only"),
            (
                "prediction",
                "predicted outputs are not carried to the upstream",
            ),
            (
                "web_search_options",
                "gpt-oss's built-in browser tool is not served by this gateway",
            ),
            (
                "functions",
                "the legacy `functions` field is not read; send `tools`",
            ),
            (
                "function_call",
                "the legacy `function_call` field is not read; send `tool_choice`",
            ),
        ];
        let pointer = format!("/{key}");
        return Err(match refused.iter().find(|(name, _)| *name == key) {
            Some((_, why)) => ApiError::unsupported(pointer, *why),
            None => ApiError::invalid(
                pointer,
                "unknown_parameter",
                format!("Unrecognized request argument supplied: {key}"),
            ),
        });
    }
    Ok(ChatRequest {
        model,
        conversation,
        effort,
        response_format,
        forced_tool,
        stop,
        stream,
        include_usage,
        sampling,
        choices,
    })
}

/// An assistant message's past reasoning as `reasoning_content` (vLLM's field), also taken
/// from `reasoning` (OpenAI's newer field); both at once must agree.
fn reasoning_field(message: &mut Value, index: usize) -> Result<(), ApiError> {
    let Some(map) = message.as_object_mut() else {
        return Ok(());
    };
    let Some(reasoning) = map.remove("reasoning") else {
        return Ok(());
    };
    let pointer = format!("/messages/{index}/reasoning");
    let text = match reasoning {
        Value::Null => return Ok(()),
        Value::String(text) => text,
        // `{"content": "..."}` or `{"text": "..."}`, as some clients send it back.
        Value::Object(inner) => match inner.get("content").or_else(|| inner.get("text")) {
            Some(Value::String(text)) => text.clone(),
            _ => {
                return Err(expected(
                    &pointer,
                    "the reasoning text",
                    &Value::Object(inner),
                ));
            }
        },
        other => return Err(expected(&pointer, "the reasoning text", &other)),
    };
    match map.get("reasoning_content") {
        None | Some(Value::Null) => {
            map.insert("reasoning_content".into(), Value::String(text));
            Ok(())
        }
        Some(Value::String(same)) if *same == text => Ok(()),
        Some(_) => Err(ApiError::invalid(
            pointer,
            "invalid_value",
            "`reasoning` and `reasoning_content` differ; send one",
        )),
    }
}

/// Only function tools: gpt-oss's built-in tools are not served here.
fn check_tools(tools: &Value) -> Result<(), ApiError> {
    let Some(items) = tools.as_array() else {
        return Err(expected("/tools", "an array of tools", tools));
    };
    for (i, tool) in items.iter().enumerate() {
        match tool.get("type").and_then(Value::as_str) {
            Some("function") | None => {}
            Some(other) => {
                return Err(ApiError::unsupported(
                    format!("/tools/{i}/type"),
                    format!("tools of type {other:?} are not served; declare a function"),
                ));
            }
        }
    }
    Ok(())
}

fn response_format(format: Value) -> Result<Option<ResponseFormat>, ApiError> {
    let spec = format.get("json_schema");
    structured_format(
        &format,
        spec,
        "/response_format",
        "/response_format/json_schema",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_core::ContentPart;

    fn param(body: Value) -> (String, String) {
        let e = read(body).unwrap_err();
        (e.param.unwrap_or_default(), e.message)
    }

    fn base() -> Value {
        json!({"model": "gpt-oss", "messages": [{"role": "user", "content": "hi"}]})
    }

    fn with(key: &str, value: Value) -> Value {
        let mut body = base();
        body[key] = value;
        body
    }

    #[test]
    fn fields_are_carried_or_refused_by_name() {
        let ok = read(with("max_completion_tokens", json!(64))).unwrap();
        assert_eq!(ok.sampling["max_tokens"], 64);
        let cases = [
            (with("n", json!(0)), "/n"),
            (with("n", json!(9)), "/n"),
            (with("n", json!(1.5)), "/n"),
            (with("logprobs", json!(true)), "/logprobs"),
            (with("tool_choice", json!("required")), "/tool_choice"),
            (
                with("reasoning_effort", json!("minimal")),
                "/reasoning_effort",
            ),
            (with("logit_bias", json!({"1": 2})), "/logit_bias"),
            (with("bogus", json!(1)), "/bogus"),
            (with("temperature", json!("hot")), "/temperature"),
            (with("stop", json!([""])), "/stop/0"),
            (with("max_tokens", json!(-1)), "/max_tokens"),
            (with("stream", json!("yes")), "/stream"),
            (with("messages", json!([])), "/messages"),
            (json!({"messages": []}), "/model"),
        ];
        for (body, pointer) in cases {
            assert_eq!(param(body.clone()).0, pointer, "{body}");
        }
        let (pointer, message) = param(with("bogus", json!(1)));
        assert_eq!(pointer, "/bogus");
        assert!(
            message.contains("Unrecognized request argument"),
            "{message}"
        );
    }

    #[test]
    fn images_are_refused_not_dropped() {
        let body = with(
            "messages",
            json!([{"role": "user", "content": [{"type": "text", "text": "what is it?"}, {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]),
        );
        let (pointer, message) = param(body);
        assert_eq!(pointer, "/messages/0/content/1");
        assert!(message.contains("text only"), "{message}");
    }

    #[test]
    fn reasoning_is_read_from_either_field() {
        for field in ["reasoning", "reasoning_content"] {
            let body = with(
                "messages",
                json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, field: "look up", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "1"}]),
            );
            let request = read(body).unwrap();
            let parts = request.conversation.messages[1].parts();
            assert!(
                matches!(&parts[0], ContentPart::Reasoning(r) if r.text == "look up"),
                "{field}"
            );
        }
    }

    #[test]
    fn a_named_function_is_forced_and_must_exist() {
        let mut body = with(
            "tools",
            json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]),
        );
        body["tool_choice"] = json!({"type": "function", "function": {"name": "f"}});
        assert_eq!(
            read(body.clone()).unwrap().forced_tool.as_deref(),
            Some("f")
        );
        body["tool_choice"]["function"]["name"] = json!("g");
        assert_eq!(param(body).0, "/tool_choice/function/name");
        let mut none = with(
            "tools",
            json!([{"type": "function", "function": {"name": "f"}}]),
        );
        none["tool_choice"] = json!("none");
        assert!(read(none).unwrap().conversation.tools.is_none());
    }
}
