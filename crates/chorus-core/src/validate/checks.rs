//! Checks a JSON Schema cannot express: argument strings, tool pairing, citation anchors,
//! base64 payloads, routing ids, versions and expiry.

use std::collections::HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::DateTime;
use indexmap::IndexMap;

use crate::citation::anchors;
use crate::handoff::{
    HandoffType, ProtocolVersion, SUPPORTED_MAJOR, SUPPORTED_VERSION, VersionCheck,
};
use crate::media::DataUrl;
use crate::problem::Problem;
use serde_json::Value;

/// Citation keys known so far in a conversation.
pub(crate) type KnownCitations = HashSet<String>;

/// Why an id cannot be used for routing, if it cannot.
pub fn routing_id_problem(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        Some("is empty")
    } else if id.chars().any(char::is_whitespace) {
        Some("contains whitespace")
    } else if id.chars().any(char::is_control) {
        Some("contains a control character")
    } else if id.contains('*') || id.contains('>') {
        Some("contains a wildcard (`*` or `>`)")
    } else if id.contains('.') {
        Some("contains `.`, the subject separator")
    } else {
        None
    }
}

fn check_routing_id(pointer: String, id: &str, problems: &mut Vec<Problem>) {
    if let Some(why) = routing_id_problem(id) {
        problems.push(
            Problem::error(
                pointer,
                format!("expected an id usable for routing, found {id:?}, which {why}"),
            )
            .with_hint("ids become bus subjects: use letters, digits, `_`, `-` or `:`"),
        );
    }
}

fn str_at<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn array_at<'a>(value: &'a Value, key: &str) -> &'a [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Checks one schema-valid message; `citations` holds keys defined by earlier messages.
pub(crate) fn check_message(
    message: &Value,
    pointer: &str,
    citations: &mut KnownCitations,
    problems: &mut Vec<Problem>,
) {
    let role = str_at(message, "role");
    if role == Some("tool") && message.get("tool_call_id").is_none() {
        problems.push(
            Problem::error(
                format!("{pointer}/tool_call_id"),
                "expected the id of the call this tool message answers, found none",
            )
            .with_hint("copy `id` from the assistant's tool call"),
        );
    }
    let calls = array_at(message, "tool_calls");
    if let Some(role) = role
        && role != "assistant"
        && !calls.is_empty()
    {
        problems.push(
            Problem::error(
                format!("{pointer}/tool_calls"),
                format!(
                    "expected tool calls only on assistant messages, found them on a {role} message"
                ),
            )
            .with_hint("move the calls to an assistant message, or set role to assistant"),
        );
    }
    let mut call_ids = HashSet::new();
    for (i, call) in calls.iter().enumerate() {
        let id = str_at(call, "id").unwrap_or_default();
        if !call_ids.insert(id) {
            problems.push(
                Problem::error(
                    format!("{pointer}/tool_calls/{i}/id"),
                    format!("expected unique call ids, found {id:?} twice"),
                )
                .with_hint(
                    "give each call of a message its own id: results are matched to calls by id",
                ),
            );
        }
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        if let Err(error) = serde_json::from_str::<serde::de::IgnoredAny>(arguments) {
            problems.push(
                Problem::error(
                    format!("{pointer}/tool_calls/{i}/function/arguments"),
                    format!("expected a JSON document in the string, found invalid JSON: {error}"),
                )
                .with_hint("arguments is the JSON text of an object, e.g. \"{\\\"city\\\": \\\"Paris\\\"}\""),
            );
        }
    }
    if let Some(Value::Object(map)) = message.pointer("/metadata/citation_map") {
        citations.extend(map.keys().cloned());
    }
    match message.get("content") {
        Some(Value::String(text)) => {
            check_anchors(text, || format!("{pointer}/content"), citations, problems);
        }
        Some(Value::Array(parts)) => {
            for (i, part) in parts.iter().enumerate() {
                check_part(
                    part,
                    || format!("{pointer}/content/{i}"),
                    citations,
                    problems,
                );
            }
        }
        _ => {}
    }
}

fn check_anchors(
    text: &str,
    pointer: impl Fn() -> String,
    citations: &KnownCitations,
    problems: &mut Vec<Problem>,
) {
    for (_, id) in anchors(text) {
        if !citations.contains(id) {
            problems.push(
                Problem::error(
                    pointer(),
                    format!("expected anchor [{id}] to have an entry in metadata.citation_map, found none"),
                )
                .with_hint("add the citation to metadata.citation_map or remove the anchor"),
            );
        }
    }
}

fn check_base64(data: &str, pointer: impl Fn() -> String, problems: &mut Vec<Problem>) {
    if STANDARD.decode(data.trim_end()).is_ok() {
        return;
    }
    if data.contains("...") {
        problems.push(
            Problem::warning(
                pointer(),
                "expected base64, found an elided placeholder (`...`)",
            )
            .with_hint("put the whole base64 data in, or point at the media by URL"),
        );
    } else {
        problems.push(
            Problem::error(
                pointer(),
                "expected base64 (standard alphabet, padded), found text that does not decode",
            )
            .with_hint("encode the raw bytes with standard base64, without line breaks"),
        );
    }
}

/// Checks one content part; `pointer` builds the part's pointer only when a check needs it.
fn check_part(
    part: &Value,
    pointer: impl Fn() -> String,
    citations: &KnownCitations,
    problems: &mut Vec<Problem>,
) {
    match str_at(part, "type").unwrap_or_default() {
        "text" => {
            let text = str_at(part, "text").unwrap_or_default();
            check_anchors(text, || format!("{}/text", pointer()), citations, problems);
        }
        "image_url" => {
            let url = part
                .pointer("/image_url/url")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(data_url) = DataUrl::parse(url) {
                check_base64(
                    data_url.base64,
                    || format!("{}/image_url/url", pointer()),
                    problems,
                );
            } else if url.starts_with("data:") {
                problems.push(
                    Problem::error(
                        format!("{}/image_url/url", pointer()),
                        "expected a base64 data URL (data:<type>;base64,<data>), found another data URL",
                    )
                    .with_hint("images in data URLs must be base64-encoded"),
                );
            }
        }
        "input_audio" => {
            let data = part
                .pointer("/input_audio/data")
                .and_then(Value::as_str)
                .unwrap_or_default();
            check_base64(data, || format!("{}/input_audio/data", pointer()), problems);
        }
        "file" => {
            if let Some(data) = part.pointer("/file/file_data").and_then(Value::as_str) {
                let payload = DataUrl::parse(data).map_or(data, |url| url.base64);
                check_base64(
                    payload,
                    || format!("{}/file/file_data", pointer()),
                    problems,
                );
            }
        }
        "data" => check_data_part(part, &pointer(), problems),
        _ => {}
    }
}

/// Checks a data part: a usable `kind`, a compilable schema, and data that fits it (a warning,
/// because data parts are often partial patches merged later).
pub(crate) fn check_data_part(part: &Value, pointer: &str, problems: &mut Vec<Problem>) {
    if let Some(kind) = str_at(part, "kind") {
        check_routing_id(format!("{pointer}/kind"), kind, problems);
    }
    let Some(schema) = part.get("schema") else {
        return;
    };
    match jsonschema::validator_for(schema) {
        Err(error) => problems.push(
            Problem::error(
                format!("{pointer}/schema"),
                format!("expected a valid JSON Schema, found one that does not compile: {error}"),
            )
            .with_hint("check the schema against JSON Schema 2020-12 (keyword names and their value types)"),
        ),
        Ok(validator) => {
            let data = part.get("data").unwrap_or(&Value::Null);
            for error in validator.iter_errors(data) {
                problems.push(
                    Problem::warning(
                        format!("{pointer}/data{}", error.instance_path().as_str()),
                        format!("data does not match its own schema: {error}"),
                    )
                    .with_hint("correct the data, or the schema it carries if the data is right"),
                );
            }
        }
    }
}

/// Checks tool pairing across a conversation, then each message.
pub(crate) fn check_conversation(messages: &[Value], problems: &mut Vec<Problem>) {
    let mut citations = KnownCitations::new();
    let mut pending: IndexMap<&str, String> = IndexMap::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        let pointer = format!("/messages/{i}");
        check_message(message, &pointer, &mut citations, problems);
        if str_at(message, "role") == Some("tool") {
            let Some(id) = str_at(message, "tool_call_id") else {
                continue;
            };
            if pending.shift_remove(id).is_some() {
                answered.insert(id);
            } else if answered.contains(id) {
                problems.push(
                    Problem::error(
                        format!("{pointer}/tool_call_id"),
                        format!("expected one result per call, found a second result for {id:?}"),
                    )
                    .with_hint("drop the repeated result, or merge the two into one tool message"),
                );
            } else {
                problems.push(
                    Problem::error(
                        format!("{pointer}/tool_call_id"),
                        format!("expected the id of an earlier tool call, found {id:?}, which no earlier assistant message calls"),
                    )
                    .with_hint("a tool result must follow the assistant message whose tool_calls contain its id"),
                );
            }
            continue;
        }
        for (id, call_pointer) in pending.drain(..) {
            problems.push(
                Problem::error(
                    call_pointer,
                    format!("expected a tool message answering call {id:?} before message {i}, found none"),
                )
                .with_hint("answer every call (an error result is fine) before the conversation goes on"),
            );
        }
        for (j, call) in array_at(message, "tool_calls").iter().enumerate() {
            let id = str_at(call, "id").unwrap_or_default();
            if answered.contains(id) || pending.contains_key(id) {
                problems.push(
                    Problem::error(
                        format!("{pointer}/tool_calls/{j}/id"),
                        format!("expected a new call id, found {id:?} used before"),
                    )
                    .with_hint("give every call in the conversation its own id"),
                );
            }
            pending.insert(id, format!("{pointer}/tool_calls/{j}"));
        }
    }
    for (id, call_pointer) in pending {
        problems.push(
            Problem::warning(
                call_pointer,
                format!("call {id:?} has no result yet (the conversation ends waiting for it)"),
            )
            .with_hint("fine for a conversation that waits on the tool; append its tool message once it ran"),
        );
    }
}

/// Checks a schema-valid handoff: version, routing ids and expiry.
pub(crate) fn check_handoff(handoff: &Value, problems: &mut Vec<Problem>) {
    let meta = handoff.get("metadata").unwrap_or(&Value::Null);
    let version_text = str_at(meta, "protocol_version").unwrap_or_default();
    let version = ProtocolVersion::parse(version_text).map(ProtocolVersion::check);
    if version == Some(VersionCheck::Unsupported) {
        problems.push(
            Problem::error(
                "/metadata/protocol_version",
                format!("expected a supported protocol version ({SUPPORTED_MAJOR}.x.y; this build writes {SUPPORTED_VERSION}), found {version_text:?}"),
            )
            .with_hint("a different major version is incompatible: convert the message or upgrade chorus"),
        );
    }
    check_routing_id(
        "/metadata/sender_id".into(),
        str_at(meta, "sender_id").unwrap_or_default(),
        problems,
    );
    match meta.get("recipient_id") {
        Some(Value::String(id)) => check_routing_id("/metadata/recipient_id".into(), id, problems),
        Some(Value::Array(ids)) => {
            for (i, id) in ids.iter().enumerate() {
                let id = id.as_str().unwrap_or_default();
                check_routing_id(format!("/metadata/recipient_id/{i}"), id, problems);
            }
        }
        _ => {}
    }
    if let Some(name) = handoff
        .pointer("/payload/handoff_type")
        .and_then(Value::as_str)
        && matches!(HandoffType::parse(name), HandoffType::Custom(_))
    {
        check_routing_id("/payload/handoff_type".into(), name, problems);
    }
    let escalate_to = "/instructions/failure_handling_strategy/escalate_to";
    if let Some(target) = handoff.pointer(escalate_to).and_then(Value::as_str) {
        check_routing_id(escalate_to.into(), target, problems);
    }
    let timestamp = str_at(meta, "timestamp").unwrap_or_default();
    if let Some(expiry) = str_at(meta, "expiration_time")
        && let (Ok(created), Ok(expires)) = (
            DateTime::parse_from_rfc3339(timestamp),
            DateTime::parse_from_rfc3339(expiry),
        )
        && expires <= created
    {
        problems.push(
            Problem::error(
                "/metadata/expiration_time",
                format!("expected a time after the timestamp {timestamp}, found {expiry}"),
            )
            .with_hint("a message that expires when it is sent can never be delivered"),
        );
    }
}

/// Checks a `harmony_handoff_v1` packet's agent ids (the schema checks `protocol`).
pub(crate) fn check_packet(packet: &Value, problems: &mut Vec<Problem>) {
    for key in ["source_agent", "target_agent"] {
        let id = packet
            .pointer(&format!("/meta/{key}"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        check_routing_id(format!("/meta/{key}"), id, problems);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_ids_reject_wildcards_and_separators() {
        assert_eq!(routing_id_problem("technical_support_agent_pool"), None);
        assert_eq!(routing_id_problem("agent-1:eu"), None);
        for bad in ["", "a b", "a\tb", "a*", "a>", "a.b", "a\u{7}"] {
            assert!(routing_id_problem(bad).is_some(), "{bad:?}");
        }
    }
}
