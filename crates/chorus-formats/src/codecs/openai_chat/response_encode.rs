//! chorus assistant messages → a `chat.completion` response object.

use chorus_core::{Conversation, CreatedAt, Message, Role};
use serde_json::{Map, Value, json};

use super::encode::message;
use crate::Format;
use crate::common::extras::merge_into;
use crate::common::json::item;
use crate::loss::{Encoded, Losses, Policy};

/// Encodes the assistant messages as the choices of one response; id, time, model, fingerprint
/// and usage come from the first one (what other messages hold differently is reported).
pub fn encode_response(conversation: &Conversation) -> Encoded<Value> {
    let mut losses = Losses::default();
    let mut out = Map::new();
    let mut choices = Vec::new();
    let mut head: Option<Map<String, Value>> = None;
    for (i, m) in conversation.messages.iter().enumerate() {
        let at = item("/messages", i);
        if m.role != Role::Assistant {
            losses.push(
                at,
                Policy::Dropped,
                "a response holds assistant messages only",
            );
            continue;
        }
        let fields = head_fields(m, choices.len());
        match &head {
            None => head = Some(fields),
            Some(first) if *first != fields => {
                losses.push(
                    &at,
                    Policy::Dropped,
                    "id, time, model or usage differ from the first choice's",
                );
            }
            Some(_) => {}
        }
        let mut metadata_extra = m
            .metadata
            .as_ref()
            .map(|md| md.extra.clone())
            .unwrap_or_default();
        let bare = Message {
            id: None,
            created_at: None,
            metadata: None,
            ..m.clone()
        };
        let (body, _) = message(&bare, &at, &mut losses);
        let mut choice = Map::new();
        choice.insert("index".into(), json!(choices.len()));
        choice.insert("message".into(), body);
        for key in ["logprobs", "finish_reason"] {
            if let Some(value) = metadata_extra.remove(key) {
                choice.insert(key.into(), value);
            }
        }
        for key in metadata_extra.keys() {
            losses.push(
                format!("{at}/metadata/{key}"),
                Policy::Dropped,
                "a choice has no such field",
            );
        }
        if let Some(md) = &m.metadata {
            let mut rest = md.clone();
            rest.extra.clear();
            rest.model_version = None;
            rest.system_fingerprint = None;
            rest.token_usage = None;
            if rest != Default::default() {
                losses.push(
                    format!("{at}/metadata"),
                    Policy::Dropped,
                    "a response has no place for this metadata",
                );
            }
        }
        choices.push(Value::Object(choice));
    }
    out.extend(head.unwrap_or_default());
    out.insert("choices".into(), Value::Array(choices));
    merge_into(
        &mut out,
        &conversation.extra,
        Format::OpenAiChatResponse,
        "",
        &mut losses,
    );
    if conversation.tools.is_some() {
        losses.push(
            "/tools",
            Policy::Dropped,
            "a response has no tool definitions",
        );
    }
    losses.finish(Value::Object(out))
}

/// The response-level fields a message carries (`#n` id suffixes of multi-choice decoding removed).
fn head_fields(m: &Message, n: usize) -> Map<String, Value> {
    let mut out = Map::new();
    if let Some(id) = &m.id {
        let suffix = format!("#{n}");
        out.insert(
            "id".into(),
            Value::String(id.strip_suffix(&suffix).unwrap_or(id).to_owned()),
        );
    }
    if let Some(CreatedAt::Unix(t)) = m.created_at {
        out.insert("created".into(), json!(t));
    }
    if let Some(md) = &m.metadata {
        if let Some(model) = &md.model_version {
            out.insert("model".into(), Value::String(model.clone()));
        }
        if let Some(fp) = &md.system_fingerprint {
            out.insert("system_fingerprint".into(), Value::String(fp.clone()));
        }
        if let Some(usage) = &md.token_usage {
            let mut u = Map::new();
            for (key, value) in [
                ("prompt_tokens", usage.prompt_tokens),
                ("completion_tokens", usage.completion_tokens),
                ("total_tokens", usage.total_tokens),
            ] {
                if let Some(v) = value {
                    u.insert(key.into(), json!(v));
                }
            }
            u.extend(usage.extra.clone());
            out.insert("usage".into(), Value::Object(u));
        }
    }
    out
}
