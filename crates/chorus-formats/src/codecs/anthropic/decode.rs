//! Anthropic Messages request or response JSON → chorus.

use chorus_core::{
    CitationMap, Content, ContentPart, Conversation, FilePart, FileRef, FunctionCall,
    FunctionDefinition, Message, Metadata, Nullable, ReasoningPart, Role, TextPart, ToolCall,
    ToolDefinition,
};
use serde_json::{Map, Value};

use super::citations::anchor;
use crate::Format;
use crate::common::extras::{part_extra, stash};
use crate::common::json::{array, child, field, item, object, opt_string, string, unknown_keys};
use crate::common::media::image;
use crate::common::origin::marked;
use crate::common::params;
use crate::common::roles;
use crate::common::usage::{self, Keys};
use chorus_core::Problem;

const ME: Format = Format::Anthropic;

/// Decodes a request `{system?, messages, tools?, ...}` or a response `{type: "message", ...}`.
pub fn conversation(value: &Value) -> Result<Conversation, Problem> {
    let map = object(value, "")?;
    if map.get("type").and_then(Value::as_str) == Some("message") {
        return response(map);
    }
    let mut messages = Vec::new();
    if let Some(system) = map.get("system") {
        let mut m = Message::new(Role::System, "");
        m.content = Nullable::Value(content(
            system,
            Role::System,
            "/system",
            &mut CitationMap::new(),
        )?);
        messages.push(m);
    }
    for (i, turn) in array(field(map, "messages", "")?, "/messages")?
        .iter()
        .enumerate()
    {
        self::turn(turn, &item("/messages", i), &mut messages)?;
    }
    let tools = match map.get("tools") {
        None => None,
        Some(tools) => Some(
            array(tools, "/tools")?
                .iter()
                .enumerate()
                .map(|(i, t)| tool(t, &item("/tools", i)))
                .collect::<Result<_, _>>()?,
        ),
    };
    let mut unknown = unknown_keys(map, &["system", "messages", "tools"]);
    let mut extra = params::read(ME, &mut unknown);
    stash(&mut extra, ME, unknown);
    Ok(Conversation {
        messages,
        tools,
        extra,
    })
}

fn response(map: &Map<String, Value>) -> Result<Conversation, Problem> {
    let mut messages = Vec::new();
    turn(&Value::Object(map.clone()), "", &mut messages)?;
    let m = messages
        .last_mut()
        .ok_or_else(|| Problem::expected("/content", "content blocks", "nothing"))?;
    m.id = opt_string(map, "id", "")?.map(str::to_owned);
    let metadata = m.metadata.get_or_insert_with(Metadata::default);
    metadata.model_version = opt_string(map, "model", "")?.map(str::to_owned);
    if let Some(usage) = map.get("usage").and_then(Value::as_object) {
        let keys = Keys {
            prompt: "input_tokens",
            completion: "output_tokens",
            total: None,
        };
        metadata.token_usage = Some(usage::read(usage, &keys));
    }
    let rest = unknown_keys(map, &["id", "type", "role", "content", "model", "usage"]);
    stash(&mut metadata.extra, ME, rest);
    m.extra.remove(&crate::common::extras::namespace(ME));
    Ok(Conversation {
        messages,
        ..Conversation::default()
    })
}

/// One turn; a user turn's tool results become chorus tool messages in place.
fn turn(value: &Value, pointer: &str, out: &mut Vec<Message>) -> Result<(), Problem> {
    let map = object(value, pointer)?;
    let text = string(map, "role", pointer)?;
    let role = roles::parse(text, &[Role::User, Role::Assistant]).ok_or_else(|| {
        Problem::expected(
            child(pointer, "role"),
            "user or assistant",
            format!("{text:?}"),
        )
        .with_hint("Anthropic takes the system prompt in the top-level `system` field")
    })?;
    let unknown = unknown_keys(map, &["role", "content"]);
    let content_at = child(pointer, "content");
    let blocks = match field(map, "content", pointer)? {
        Value::String(text) => {
            let mut m = Message::new(role, text.clone());
            stash(&mut m.extra, ME, unknown);
            out.push(m);
            return Ok(());
        }
        other => array(other, &content_at)?,
    };
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    let mut citations = CitationMap::new();
    let mut pending = false;
    for (i, block) in blocks.iter().enumerate() {
        let at = item(&content_at, i);
        let kind = string(object(block, &at)?, "type", &at)?;
        match kind {
            "tool_result" if role == Role::User => {
                if pending {
                    out.push(Message::with_parts(role, std::mem::take(&mut parts)));
                    pending = false;
                }
                out.push(tool_result(block, &at)?);
            }
            "tool_use" if role == Role::Assistant => calls.push(tool_use(block, &at)?),
            _ => {
                parts.push(part(block, role, &at, &mut citations)?);
                pending = true;
            }
        }
    }
    if pending || !calls.is_empty() || blocks.is_empty() {
        let mut m = Message::with_parts(role, parts);
        if !calls.is_empty() {
            if !pending {
                m.content = Nullable::Null;
            }
            m.tool_calls = Nullable::Value(calls);
        }
        if !citations.is_empty() {
            m.metadata = Some(Metadata {
                citation_map: Some(citations),
                ..Metadata::default()
            });
        }
        stash(&mut m.extra, ME, unknown);
        out.push(m);
    }
    Ok(())
}

fn content(
    value: &Value,
    role: Role,
    pointer: &str,
    citations: &mut CitationMap,
) -> Result<Content, Problem> {
    Ok(match value {
        Value::String(text) => Content::Text(text.clone()),
        other => Content::Parts(
            array(other, pointer)?
                .iter()
                .enumerate()
                .map(|(i, b)| part(b, role, &item(pointer, i), citations))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// One content block that is not a tool use or tool result.
fn part(
    block: &Value,
    role: Role,
    at: &str,
    citations: &mut CitationMap,
) -> Result<ContentPart, Problem> {
    let map = object(block, at)?;
    let kind = string(map, "type", at)?;
    let (part, known): (ContentPart, &[&str]) = match kind {
        "text" => {
            let mut text = string(map, "text", at)?.to_owned();
            if let Some(Value::Array(cited)) = map.get("citations") {
                anchor(&mut text, cited, citations);
            }
            (
                ContentPart::Text(TextPart {
                    text,
                    ..TextPart::default()
                }),
                &["type", "text", "citations"],
            )
        }
        "thinking" if role == Role::Assistant => {
            let part = ReasoningPart {
                text: string(map, "thinking", at)?.to_owned(),
                signature: opt_string(map, "signature", at)?.map(str::to_owned),
                ..ReasoningPart::default()
            };
            (
                ContentPart::Reasoning(part),
                &["type", "thinking", "signature"],
            )
        }
        "image" if source_type(map, at)? != "file" => {
            let source = object(field(map, "source", at)?, &child(at, "source"))?;
            let url = match string(source, "type", &child(at, "source"))? {
                "base64" => format!(
                    "data:{};base64,{}",
                    string(source, "media_type", at)?,
                    string(source, "data", at)?
                ),
                _ => string(source, "url", &child(at, "source"))?.to_owned(),
            };
            (ContentPart::Image(image(url)), &["type", "source"])
        }
        "document" if matches!(source_type(map, at)?, "base64" | "url" | "text" | "file") => {
            let source = object(field(map, "source", at)?, &child(at, "source"))?;
            let mut file = FileRef {
                file_id: opt_string(source, "file_id", at)?.map(str::to_owned),
                file_data: opt_string(source, "data", at)?.map(str::to_owned),
                url: opt_string(source, "url", at)?.map(str::to_owned),
                filename: opt_string(map, "title", at)?.map(str::to_owned),
                mime_type: opt_string(source, "media_type", at)?.map(str::to_owned),
                extra: Map::new(),
            };
            if source.get("type").and_then(Value::as_str) == Some("base64") {
                // Chat Completions' convention: inline files are data URLs.
                let mime = file.mime_type.take().unwrap_or_default();
                file.file_data = file.file_data.map(|d| format!("data:{mime};base64,{d}"));
            }
            (
                ContentPart::File(FilePart {
                    file,
                    extra: Map::new(),
                }),
                &["type", "source", "title"],
            )
        }
        _ => {
            return Ok(ContentPart::Other(marked(map, ME)));
        }
    };
    Ok(with_extra(part, unknown_keys(map, known)))
}

fn source_type<'a>(map: &'a Map<String, Value>, at: &str) -> Result<&'a str, Problem> {
    string(
        object(field(map, "source", at)?, &child(at, "source"))?,
        "type",
        &child(at, "source"),
    )
}

fn with_extra(mut part: ContentPart, unknown: Map<String, Value>) -> ContentPart {
    if !matches!(part, ContentPart::Other(_)) {
        stash(part_extra(&mut part), ME, unknown);
    }
    part
}

fn tool_use(block: &Value, at: &str) -> Result<ToolCall, Problem> {
    let map = object(block, at)?;
    let input = field(map, "input", at)?;
    let mut call = ToolCall {
        id: string(map, "id", at)?.to_owned(),
        kind: Some("function".into()),
        function: FunctionCall {
            name: string(map, "name", at)?.to_owned(),
            arguments: input.to_string(),
            extra: Map::new(),
        },
        extra: Map::new(),
    };
    stash(
        &mut call.extra,
        ME,
        unknown_keys(map, &["type", "id", "name", "input"]),
    );
    Ok(call)
}

fn tool_result(block: &Value, at: &str) -> Result<Message, Problem> {
    let map = object(block, at)?;
    let mut m = Message::new(Role::Tool, "");
    m.tool_call_id = Some(string(map, "tool_use_id", at)?.to_owned());
    m.content = match map.get("content") {
        None => Nullable::Absent,
        Some(c) => Nullable::Value(content(
            c,
            Role::Tool,
            &child(at, "content"),
            &mut CitationMap::new(),
        )?),
    };
    let mut unknown = unknown_keys(map, &["type", "tool_use_id", "content"]);
    // `is_error: true` on a seed-000 error result is implied by the result itself.
    if unknown.get("is_error") == Some(&Value::Bool(true)) && super::holds_error(&m) {
        unknown.remove("is_error");
    }
    stash(&mut m.extra, ME, unknown);
    Ok(m)
}

fn tool(value: &Value, at: &str) -> Result<ToolDefinition, Problem> {
    let map = object(value, at)?;
    let function = FunctionDefinition {
        name: string(map, "name", at)?.to_owned(),
        description: opt_string(map, "description", at)?.map(str::to_owned),
        parameters: map.get("input_schema").cloned(),
        strict: map.get("strict").and_then(Value::as_bool),
        extra: Map::new(),
    };
    let own: &[&str] = &["name", "description", "input_schema", "strict"];
    let (kind, mut unknown) = match opt_string(map, "type", at)? {
        None | Some("custom") => ("function", unknown_keys(map, own)),
        Some(server) => (
            server,
            unknown_keys(map, &["type", "name", "description", "input_schema"]),
        ),
    };
    if kind == "function" {
        unknown.remove("type");
        if map.contains_key("type") {
            unknown.insert("type".into(), Value::String("custom".into()));
        }
    }
    let mut tool = ToolDefinition {
        kind: Some(kind.to_owned()),
        function,
        extra: Map::new(),
        given: None,
    };
    stash(&mut tool.extra, ME, unknown);
    Ok(tool)
}
