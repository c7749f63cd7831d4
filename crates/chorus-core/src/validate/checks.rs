//! Checks a JSON Schema cannot express: argument strings, tool pairing, citation anchors,
//! base64 payloads, routing ids, versions and expiry.

use std::collections::HashSet;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use chrono::DateTime;
use indexmap::IndexMap;

use super::problem::Problem;
use crate::citation::anchors;
use crate::handoff::{
    HandoffMessage, HandoffPacket, HandoffType, ProtocolVersion, SUPPORTED_MAJOR,
    SUPPORTED_VERSION, VersionCheck,
};
use crate::media::DataUrl;
use crate::message::{Content, Message, Role};
use crate::parts::{ContentPart, DataPart};

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

/// Checks one message; `citations` holds keys defined by earlier messages of a conversation.
pub(crate) fn check_message(
    message: &Message,
    pointer: &str,
    citations: &mut KnownCitations,
    problems: &mut Vec<Problem>,
) {
    if message.role == Role::Tool && message.tool_call_id.is_none() {
        problems.push(
            Problem::error(
                format!("{pointer}/tool_call_id"),
                "expected the id of the call this tool message answers, found none",
            )
            .with_hint("copy `id` from the assistant's tool call"),
        );
    }
    if !message.calls().is_empty() && message.role != Role::Assistant {
        problems.push(Problem::error(
            format!("{pointer}/tool_calls"),
            format!(
                "expected tool calls only on assistant messages, found them on a {} message",
                message.role.as_str()
            ),
        ));
    }
    let mut call_ids = HashSet::new();
    for (i, call) in message.calls().iter().enumerate() {
        let call_pointer = format!("{pointer}/tool_calls/{i}");
        if !call_ids.insert(call.id.as_str()) {
            problems.push(Problem::error(
                format!("{call_pointer}/id"),
                format!("expected unique call ids, found {:?} twice", call.id),
            ));
        }
        if let Err(error) = call.parsed_arguments() {
            problems.push(
                Problem::error(
                    format!("{call_pointer}/function/arguments"),
                    format!("expected a JSON document in the string, found invalid JSON: {error}"),
                )
                .with_hint("arguments is the JSON text of an object, e.g. \"{\\\"city\\\": \\\"Paris\\\"}\""),
            );
        }
    }
    if let Some(map) = message
        .metadata
        .as_ref()
        .and_then(|m| m.citation_map.as_ref())
    {
        citations.extend(map.keys().cloned());
    }
    match message.content() {
        Some(Content::Text(text)) => {
            check_anchors(text, &format!("{pointer}/content"), citations, problems)
        }
        Some(Content::Parts(parts)) => {
            for (i, part) in parts.iter().enumerate() {
                check_part(part, &format!("{pointer}/content/{i}"), citations, problems);
            }
        }
        None => {}
    }
}

fn check_anchors(
    text: &str,
    pointer: &str,
    citations: &KnownCitations,
    problems: &mut Vec<Problem>,
) {
    for (_, id) in anchors(text) {
        if !citations.contains(id) {
            problems.push(
                Problem::error(pointer, format!("expected anchor [{id}] to have an entry in metadata.citation_map, found none"))
                    .with_hint("add the citation to metadata.citation_map or remove the anchor"),
            );
        }
    }
}

fn check_base64(data: &str, pointer: String, problems: &mut Vec<Problem>) {
    if STANDARD.decode(data.trim_end()).is_ok() {
        return;
    }
    if data.contains("...") {
        problems.push(Problem::warning(
            pointer,
            "expected base64, found an elided placeholder (`...`)",
        ));
    } else {
        problems.push(
            Problem::error(
                pointer,
                "expected base64 (standard alphabet, padded), found text that does not decode",
            )
            .with_hint("encode the raw bytes with standard base64, without line breaks"),
        );
    }
}

pub(crate) fn check_part(
    part: &ContentPart,
    pointer: &str,
    citations: &KnownCitations,
    problems: &mut Vec<Problem>,
) {
    match part {
        ContentPart::Text(text) => {
            check_anchors(&text.text, &format!("{pointer}/text"), citations, problems)
        }
        ContentPart::Image(image) => {
            if let Some(url) = DataUrl::parse(&image.image_url.url) {
                check_base64(url.base64, format!("{pointer}/image_url/url"), problems);
            } else if image.image_url.url.starts_with("data:") {
                problems.push(
                    Problem::error(format!("{pointer}/image_url/url"), "expected a base64 data URL (data:<type>;base64,<data>), found another data URL")
                        .with_hint("images in data URLs must be base64-encoded"),
                );
            }
        }
        ContentPart::Audio(audio) => check_base64(
            &audio.input_audio.data,
            format!("{pointer}/input_audio/data"),
            problems,
        ),
        ContentPart::File(file) => {
            if let Some(data) = &file.file.file_data {
                let payload = DataUrl::parse(data).map_or(data.as_str(), |url| url.base64);
                check_base64(payload, format!("{pointer}/file/file_data"), problems);
            }
        }
        ContentPart::Data(data) => check_data_part(data, pointer, problems),
        ContentPart::Reasoning(_) | ContentPart::Other(_) => {}
    }
}

/// Checks a data part: a usable `kind`, a compilable schema, and data that fits it (a warning,
/// because data parts are often partial patches merged later).
pub(crate) fn check_data_part(part: &DataPart, pointer: &str, problems: &mut Vec<Problem>) {
    if let Some(kind) = &part.kind {
        check_routing_id(format!("{pointer}/kind"), kind, problems);
    }
    let Some(schema) = &part.schema else { return };
    match jsonschema::validator_for(schema) {
        Err(error) => problems.push(Problem::error(
            format!("{pointer}/schema"),
            format!("expected a valid JSON Schema, found one that does not compile: {error}"),
        )),
        Ok(validator) => {
            for error in validator.iter_errors(&part.data) {
                problems.push(Problem::warning(
                    format!("{pointer}/data{}", error.instance_path().as_str()),
                    format!("data does not match its own schema: {error}"),
                ));
            }
        }
    }
}

/// Checks tool pairing across a conversation, then each message.
pub(crate) fn check_conversation(messages: &[Message], problems: &mut Vec<Problem>) {
    let mut citations = KnownCitations::new();
    let mut pending: IndexMap<&str, String> = IndexMap::new();
    let mut answered: HashSet<&str> = HashSet::new();
    for (i, message) in messages.iter().enumerate() {
        let pointer = format!("/messages/{i}");
        check_message(message, &pointer, &mut citations, problems);
        if message.role == Role::Tool {
            let Some(id) = message.tool_call_id.as_deref() else {
                continue;
            };
            if pending.shift_remove(id).is_some() {
                answered.insert(id);
            } else if answered.contains(id) {
                problems.push(Problem::error(
                    format!("{pointer}/tool_call_id"),
                    format!("expected one result per call, found a second result for {id:?}"),
                ));
            } else {
                problems.push(
                    Problem::error(format!("{pointer}/tool_call_id"), format!("expected the id of an earlier tool call, found {id:?}, which no earlier assistant message calls"))
                        .with_hint("a tool result must follow the assistant message whose tool_calls contain its id"),
                );
            }
            continue;
        }
        for (id, call_pointer) in pending.drain(..) {
            problems.push(
                Problem::error(call_pointer, format!("expected a tool message answering call {id:?} before message {i}, found none"))
                    .with_hint("answer every call (an error result is fine) before the conversation goes on"),
            );
        }
        for (j, call) in message.calls().iter().enumerate() {
            if answered.contains(call.id.as_str()) || pending.contains_key(call.id.as_str()) {
                problems.push(Problem::error(
                    format!("{pointer}/tool_calls/{j}/id"),
                    format!("expected a new call id, found {:?} used before", call.id),
                ));
            }
            pending.insert(call.id.as_str(), format!("{pointer}/tool_calls/{j}"));
        }
    }
    for (id, call_pointer) in pending {
        problems.push(Problem::warning(
            call_pointer,
            format!("call {id:?} has no result yet (the conversation ends waiting for it)"),
        ));
    }
}

/// The version check of a handoff: `None` when the version cannot be parsed (the schema says so).
pub(crate) fn check_handoff(
    handoff: &HandoffMessage,
    problems: &mut Vec<Problem>,
) -> Option<VersionCheck> {
    let meta = &handoff.metadata;
    let version = ProtocolVersion::parse(&meta.protocol_version).map(ProtocolVersion::check);
    if version == Some(VersionCheck::Unsupported) {
        problems.push(
            Problem::error("/metadata/protocol_version", format!("expected a supported protocol version ({SUPPORTED_MAJOR}.x.y; this build writes {SUPPORTED_VERSION}), found {:?}", meta.protocol_version))
                .with_hint("a different major version is incompatible: convert the message or upgrade chorus"),
        );
    }
    check_routing_id("/metadata/sender_id".into(), &meta.sender_id, problems);
    for (i, id) in meta.recipient_id.ids().into_iter().enumerate() {
        let pointer = match &meta.recipient_id {
            crate::handoff::Recipients::One(_) => "/metadata/recipient_id".to_owned(),
            crate::handoff::Recipients::Many(_) => format!("/metadata/recipient_id/{i}"),
        };
        check_routing_id(pointer, id, problems);
    }
    if let HandoffType::Custom(name) = &handoff.payload.handoff_type {
        check_routing_id("/payload/handoff_type".into(), name, problems);
    }
    if let Some(target) = handoff
        .instructions
        .failure_handling_strategy
        .as_ref()
        .and_then(|f| f.escalate_to.as_deref())
    {
        check_routing_id(
            "/instructions/failure_handling_strategy/escalate_to".into(),
            target,
            problems,
        );
    }
    if let Some(expiry) = &meta.expiration_time
        && let (Ok(created), Ok(expires)) = (
            DateTime::parse_from_rfc3339(&meta.timestamp),
            DateTime::parse_from_rfc3339(expiry),
        )
        && expires <= created
    {
        problems.push(
            Problem::error(
                "/metadata/expiration_time",
                format!(
                    "expected a time after the timestamp {}, found {expiry}",
                    meta.timestamp
                ),
            )
            .with_hint("a message that expires when it is sent can never be delivered"),
        );
    }
    version
}

/// Checks a `harmony_handoff_v1` packet's agent ids (the schema checks `protocol`).
pub(crate) fn check_packet(packet: &HandoffPacket, problems: &mut Vec<Problem>) {
    check_routing_id(
        "/meta/source_agent".into(),
        &packet.meta.source_agent,
        problems,
    );
    check_routing_id(
        "/meta/target_agent".into(),
        &packet.meta.target_agent,
        problems,
    );
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
