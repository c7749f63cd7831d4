//! A Responses API request, checked field by field and read into the same [`ChatRequest`] a
//! Chat Completions request becomes, plus what the response echoes and what is stored.

use chorus_core::{Conversation, Message, Role};
use chorus_formats::{Codec, OpenAiResponses};
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::fields::{ChatRequest, effort, expected, structured_format, text_only, whole_number};

/// What a Responses request asks besides the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsesRequest {
    /// The request as the prompt needs it (its conversation without the earlier responses).
    pub chat: ChatRequest,
    /// `instructions`, echoed and rendered, never carried to a later response.
    pub instructions: Option<String>,
    /// The response this one continues.
    pub previous_response_id: Option<String>,
    /// Keep the response for `previous_response_id` and `GET` (default true).
    pub store: bool,
    /// Fields the response object echoes as given (`tools`, `tool_choice`, `text`, ...).
    pub echo: Map<String, Value>,
}

/// Accepted and not used: they change nothing a raw completions engine does.
const IGNORED: [&str; 7] = [
    "user",
    "include",
    "service_tier",
    "safety_identifier",
    "prompt_cache_key",
    "stream_options",
    "top_logprobs",
];

/// Reads and checks a request body.
pub fn read(body: Value) -> Result<ResponsesRequest, ApiError> {
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
    let input = map.remove("input").ok_or_else(|| {
        ApiError::invalid(
            "/input",
            "missing_required_parameter",
            "`input` is required",
        )
    })?;
    let input = reasoning_content_as_summary(input);
    let instructions = match map.remove("instructions") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(other) => return Err(expected("/instructions", "a string", &other)),
    };
    let mut echo = Map::new();
    let tools = map.remove("tools").filter(|t| !t.is_null());
    if let Some(tools) = &tools {
        check_tools(tools)?;
        echo.insert("tools".into(), tools.clone());
    }
    let mut forced_tool = None;
    let mut with_tools = tools.clone();
    match map.remove("tool_choice") {
        None | Some(Value::Null) => {}
        Some(choice) => {
            echo.insert("tool_choice".into(), choice.clone());
            match choice.as_str() {
                Some("auto") => {}
                Some("none") => with_tools = None,
                Some("required") => {
                    return Err(ApiError::unsupported(
                        "/tool_choice",
                        "`tool_choice: \"required\"` cannot be enforced on a raw completions engine (it needs a grammar over every tool's call); name one function instead, or use \"auto\"",
                    ));
                }
                _ => {
                    let name = choice
                        .get("name")
                        .and_then(Value::as_str)
                        .filter(|_| choice.get("type").and_then(Value::as_str) == Some("function"));
                    let Some(name) = name else {
                        return Err(expected(
                            "/tool_choice",
                            "auto, none, or {\"type\": \"function\", \"name\": ...}",
                            &choice,
                        ));
                    };
                    let declared = tools
                        .as_ref()
                        .and_then(Value::as_array)
                        .is_some_and(|tools| {
                            tools
                                .iter()
                                .any(|t| t.get("name").and_then(Value::as_str) == Some(name))
                        });
                    if !declared {
                        return Err(ApiError::invalid(
                            "/tool_choice/name",
                            "invalid_value",
                            format!("`tool_choice` names {name:?}, which is not among the tools"),
                        ));
                    }
                    forced_tool = Some(name.to_owned());
                }
            }
        }
    }
    let mut document = json!({ "input": input });
    if let Some(tools) = with_tools {
        document["tools"] = tools;
    }
    let conversation =
        OpenAiResponses::decode(document).map_err(|p| ApiError::from_problem("", &p))?;
    text_only(&conversation)?;
    let effort = match map.remove("reasoning") {
        None | Some(Value::Null) => None,
        Some(reasoning) => {
            echo.insert("reasoning".into(), reasoning.clone());
            match reasoning.get("effort") {
                None => None,
                Some(value) => effort(value, "/reasoning/effort")?,
            }
        }
    };
    let response_format = match map.remove("text") {
        None | Some(Value::Null) => None,
        Some(text) => {
            echo.insert("text".into(), text.clone());
            match text.get("format") {
                None | Some(Value::Null) => None,
                Some(format) => {
                    structured_format(format, Some(format), "/text/format", "/text/format")?
                }
            }
        }
    };
    let stream = match map.remove("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(expected("/stream", "true or false", &other)),
    };
    let store = match map.remove("store") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => b,
        Some(other) => return Err(expected("/store", "true or false", &other)),
    };
    let previous_response_id = match map.remove("previous_response_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id),
        Some(other) => return Err(expected("/previous_response_id", "a response id", &other)),
    };
    let mut sampling = Map::new();
    if let Some(n) = map.remove("max_output_tokens").filter(|v| !v.is_null()) {
        echo.insert("max_output_tokens".into(), n.clone());
        sampling.insert("max_tokens".into(), whole_number("/max_output_tokens", n)?);
    }
    for key in ["temperature", "top_p"] {
        if let Some(value) = map.remove(key).filter(|v| !v.is_null()) {
            if !value.is_number() {
                return Err(expected(&format!("/{key}"), "a number", &value));
            }
            echo.insert(key.into(), value.clone());
            sampling.insert(key.into(), value);
        }
    }
    for key in ["metadata", "parallel_tool_calls", "truncation"] {
        if let Some(value) = map.remove(key).filter(|v| !v.is_null()) {
            echo.insert(key.into(), value);
        }
    }
    if echo.get("truncation").and_then(Value::as_str) == Some("auto") {
        return Err(ApiError::unsupported(
            "/truncation",
            "`truncation: \"auto\"` is not done by this gateway; trim the conversation first (chorus trim), or send \"disabled\"",
        ));
    }
    for key in IGNORED {
        map.remove(key);
    }
    if let Some((key, _)) = map.into_iter().next() {
        let refused = [
            (
                "background",
                "background responses are not served; stream instead",
            ),
            (
                "conversation",
                "conversation objects are not served; use previous_response_id",
            ),
            (
                "prompt",
                "prompt templates are not served; send `instructions` and `input`",
            ),
            (
                "max_tool_calls",
                "a cap on tool calls is not enforced by this gateway",
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
    Ok(ResponsesRequest {
        chat: ChatRequest {
            model,
            conversation,
            effort,
            response_format,
            forced_tool,
            stop: Vec::new(),
            stream,
            include_usage: false,
            sampling,
            choices: 1,
        },
        instructions,
        previous_response_id,
        store,
        echo,
    })
}

impl ResponsesRequest {
    /// The conversation to render: the instructions, the earlier responses' conversation, then
    /// this request's input.
    pub fn conversation(&self, earlier: &[Message]) -> Conversation {
        let mut messages = Vec::new();
        if let Some(instructions) = &self.instructions {
            messages.push(Message::new(Role::System, instructions.clone()));
        }
        messages.extend_from_slice(earlier);
        messages.extend(self.chat.conversation.messages.iter().cloned());
        Conversation {
            messages,
            tools: self.chat.conversation.tools.clone(),
            extra: Map::new(),
        }
    }
}

/// Only function tools: built-in and custom tools are not served here.
fn check_tools(tools: &Value) -> Result<(), ApiError> {
    let Some(items) = tools.as_array() else {
        return Err(expected("/tools", "an array of tools", tools));
    };
    for (i, tool) in items.iter().enumerate() {
        match tool.get("type").and_then(Value::as_str) {
            Some("function") => {}
            Some(other) => {
                return Err(ApiError::unsupported(
                    format!("/tools/{i}/type"),
                    format!("tools of type {other:?} are not served; declare a function"),
                ));
            }
            None => {
                return Err(ApiError::invalid(
                    format!("/tools/{i}/type"),
                    "missing_required_parameter",
                    "a tool needs `type: \"function\"`",
                ));
            }
        }
    }
    Ok(())
}

/// A reasoning item carries gpt-oss's reasoning as `content` (`reasoning_text` parts), which
/// the Responses codec does not read; it is moved to `summary` when that is empty.
fn reasoning_content_as_summary(mut input: Value) -> Value {
    for item in input.as_array_mut().into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) != Some("reasoning") {
            continue;
        }
        let Some(map) = item.as_object_mut() else {
            continue;
        };
        let text: Vec<String> = map
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| part.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let summary_empty = map
            .get("summary")
            .and_then(Value::as_array)
            .is_none_or(|s| s.is_empty());
        map.remove("content");
        map.remove("status");
        map.remove("id");
        if summary_empty && !text.is_empty() {
            map.insert(
                "summary".into(),
                json!([{"type": "summary_text", "text": text.join("")}]),
            );
        }
    }
    input
}
