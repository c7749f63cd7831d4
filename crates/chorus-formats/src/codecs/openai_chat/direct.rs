//! Decoding a Chat Completions request straight from its text, without a `serde_json::Value`
//! tree in between (the fast path of [`super::decode_str`]). Any failure falls back to the
//! value-based decoder, which names the JSON pointer of the problem.

use std::borrow::Cow;
use std::fmt;

use chorus_core::{
    Content, ContentPart, Conversation, CreatedAt, Message, Metadata, Nullable, Role, ToolCall,
};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::decode::tools;
use crate::common::reasoning;
use crate::common::roles;

/// The request, or `None` when the input needs the value-based decoder (errors, other shapes).
pub fn request(input: &str) -> Option<Conversation> {
    let mut de = serde_json::Deserializer::from_str(input);
    let conversation = de.deserialize_map(RequestVisitor).ok()?;
    de.end().ok()?;
    Some(conversation)
}

struct RequestVisitor;

impl<'de> Visitor<'de> for RequestVisitor {
    type Value = Conversation;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Chat Completions request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Conversation, A::Error> {
        let mut conversation = Conversation::default();
        let mut seen_messages = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "messages" => {
                    conversation.messages = map.next_value_seed(MessagesSeed)?;
                    seen_messages = true;
                }
                "tools" => {
                    // Through the value decoder, which keeps each definition as given.
                    let tools = tools(map.next_value()?).map_err(de::Error::custom)?;
                    conversation.tools = Some(tools);
                }
                _ => {
                    conversation
                        .extra
                        .insert(key.into_owned(), map.next_value::<Value>()?);
                }
            }
        }
        if !seen_messages {
            return Err(de::Error::missing_field("messages"));
        }
        Ok(conversation)
    }
}

struct MessagesSeed;

impl<'de> DeserializeSeed<'de> for MessagesSeed {
    type Value = Vec<Message>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Message>, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for MessagesSeed {
    type Value = Vec<Message>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Message>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(16));
        while let Some(message) = seq.next_element_seed(MessageSeed)? {
            out.push(message);
        }
        Ok(out)
    }
}

struct MessageSeed;

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = Message;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Message, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MessageSeed {
    type Value = Message;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Message, A::Error> {
        let mut message = Message::new(Role::User, "");
        message.content = Nullable::Absent;
        let mut role = None;
        let mut reasoning: Option<String> = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "role" => role = Some(parse_role(&map.next_value::<Cow<'de, str>>()?)?),
                "content" => message.content = map.next_value::<ContentField>()?.0,
                "id" => message.id = map.next_value()?,
                "name" => message.name = map.next_value()?,
                "tool_call_id" => message.tool_call_id = map.next_value()?,
                "channel" => message.channel = map.next_value()?,
                "recipient" => message.recipient = map.next_value()?,
                "reasoning_content" => reasoning = map.next_value()?,
                // Ollama's `tool_name` is read by the value-based decoder.
                "tool_name" => return Err(de::Error::custom("tool_name")),
                "created_at" => message.created_at = map.next_value::<Option<CreatedAt>>()?,
                "metadata" => message.metadata = map.next_value::<Option<Metadata>>()?,
                "tool_calls" => message.tool_calls = map.next_value::<Nullable<Vec<ToolCall>>>()?,
                _ => {
                    message
                        .extra
                        .insert(key.into_owned(), map.next_value::<Value>()?);
                }
            }
        }
        message.role = role.ok_or_else(|| de::Error::missing_field("role"))?;
        if let Some(reasoning) = reasoning {
            reasoning::prepend(&mut message, reasoning);
        }
        Ok(message)
    }
}

fn parse_role<E: de::Error>(role: &str) -> Result<Role, E> {
    roles::parse(role, &roles::ALL).ok_or_else(|| E::custom(format!("unknown role {role:?}")))
}

/// A `content` value: a string, `null`, or an array of parts.
struct ContentField(Nullable<Content>);

impl<'de> de::Deserialize<'de> for ContentField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = ContentField;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string, an array of parts or null")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<ContentField, E> {
        Ok(ContentField(Nullable::Value(Content::Text(
            text.to_owned(),
        ))))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<ContentField, E> {
        Ok(ContentField(Nullable::Value(Content::Text(text))))
    }

    fn visit_unit<E: de::Error>(self) -> Result<ContentField, E> {
        Ok(ContentField(Nullable::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ContentField, A::Error> {
        let mut parts = Vec::new();
        while let Some(part) = seq.next_element::<ContentPart>()? {
            parts.push(part);
        }
        Ok(ContentField(Nullable::Value(Content::Parts(parts))))
    }
}

#[cfg(test)]
mod tests {
    use chorus_core::ToolDefinition;
    use serde_json::{Value, json};

    #[test]
    fn the_fast_path_keeps_tools_as_given() {
        let tools = json!([
            {"function": {"name": "f"}, "type": "function"},
            {"description": "d", "name": "g"}]);
        let text = json!({"messages": [], "tools": tools}).to_string();
        let conversation = super::request(&text).expect("the fast path takes it");
        let tools_out = conversation.tools.unwrap();
        let given: Vec<Value> = tools_out.iter().map(ToolDefinition::as_given).collect();
        assert_eq!(Value::Array(given).to_string(), tools.to_string());
    }
}
