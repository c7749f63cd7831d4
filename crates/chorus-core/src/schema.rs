//! JSON Schemas (draft 2020-12) generated from the types, one per document kind.

use std::fmt;
use std::str::FromStr;

use schemars::transform::{Transform, transform_subschemas};
use schemars::{JsonSchema, Schema, SchemaGenerator, generate::SchemaSettings};
use serde_json::{Value, json};

use crate::conversation::Conversation;
use crate::handoff::{
    ApprovalRequestData, EscalationData, HandoffMessage, HandoffPacket, HandoffType,
    NotificationData, ProvideInformationData, RequestInformationData, StatusUpdateData,
    TaskTransferData,
};
use crate::message::Message;
use crate::parts::DataPart;

/// The kinds of document chorus validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// One message.
    Message,
    /// Messages plus tool definitions.
    Conversation,
    /// A seed-003 handoff message.
    Handoff,
    /// A `harmony_handoff_v1` packet.
    HarmonyHandoff,
    /// A `data` content part (seed 004).
    Data,
}

impl Kind {
    /// Every kind, in documentation order.
    pub const ALL: [Kind; 5] = [
        Kind::Message,
        Kind::Conversation,
        Kind::Handoff,
        Kind::HarmonyHandoff,
        Kind::Data,
    ];

    /// The kind's name on the command line and in file names.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Message => "message",
            Kind::Conversation => "conversation",
            Kind::Handoff => "handoff",
            Kind::HarmonyHandoff => "harmony-handoff",
            Kind::Data => "data",
        }
    }

    /// The kind's JSON Schema.
    pub fn schema(self) -> Value {
        match self {
            Kind::Message => root_schema::<Message>(),
            Kind::Conversation => root_schema::<Conversation>(),
            Kind::Handoff => handoff_schema(),
            Kind::HarmonyHandoff => root_schema::<HandoffPacket>(),
            Kind::Data => data_part_schema(),
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<_> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown kind `{name}`; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_deserialize()
        .with_transform(NoNullForOptions)
        .into_generator()
}

/// Optional fields are left out, not `null`: a `null` would not survive a round trip.
/// Fields that keep `null` apart from absent say so with `{"const": null}`, which stays.
#[derive(Debug, Clone)]
struct NoNullForOptions;

impl Transform for NoNullForOptions {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let Some(object) = schema.as_object_mut() else {
            return;
        };
        if let Some(Value::Array(types)) = object.get_mut("type") {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let single = types.remove(0);
                object.insert("type".into(), single);
            }
        }
        if let Some(Value::Array(branches)) = object.get_mut("anyOf") {
            branches.retain(|b| *b != json!({ "type": "null" }));
            if branches.len() == 1
                && let Some(Value::Object(single)) = branches.pop()
            {
                object.remove("anyOf");
                for (key, value) in single {
                    object.entry(key).or_insert(value);
                }
            }
        }
    }
}

fn root_schema<T: JsonSchema>() -> Value {
    generator().into_root_schema_for::<T>().to_value()
}

/// The data schema of a standard handoff type; `None` for custom types.
pub fn handoff_data_schema(handoff_type: &HandoffType) -> Option<Value> {
    Some(match handoff_type {
        HandoffType::TaskTransfer => root_schema::<TaskTransferData>(),
        HandoffType::RequestInformation => root_schema::<RequestInformationData>(),
        HandoffType::ProvideInformation => root_schema::<ProvideInformationData>(),
        HandoffType::Escalation => root_schema::<EscalationData>(),
        HandoffType::Notification => root_schema::<NotificationData>(),
        HandoffType::StatusUpdate => root_schema::<StatusUpdateData>(),
        HandoffType::ApprovalRequest => root_schema::<ApprovalRequestData>(),
        HandoffType::Custom(_) => return None,
    })
}

/// The handoff message schema without the per-type data conditions.
pub fn handoff_base_schema() -> Value {
    root_schema::<HandoffMessage>()
}

/// The full handoff schema: the base plus one `if`/`then` per standard type for `payload.data`.
fn handoff_schema() -> Value {
    let mut generator = generator();
    let mut root = generator.root_schema_for::<HandoffMessage>().to_value();
    let refs = [
        (
            HandoffType::TaskTransfer,
            generator.subschema_for::<TaskTransferData>(),
        ),
        (
            HandoffType::RequestInformation,
            generator.subschema_for::<RequestInformationData>(),
        ),
        (
            HandoffType::ProvideInformation,
            generator.subschema_for::<ProvideInformationData>(),
        ),
        (
            HandoffType::Escalation,
            generator.subschema_for::<EscalationData>(),
        ),
        (
            HandoffType::Notification,
            generator.subschema_for::<NotificationData>(),
        ),
        (
            HandoffType::StatusUpdate,
            generator.subschema_for::<StatusUpdateData>(),
        ),
        (
            HandoffType::ApprovalRequest,
            generator.subschema_for::<ApprovalRequestData>(),
        ),
    ];
    let conditions: Vec<Value> = refs
        .into_iter()
        .map(|(handoff_type, data_ref)| {
            json!({
                "if": { "properties": { "payload": { "properties": {
                    "handoff_type": { "const": handoff_type.as_str() } } } } },
                "then": { "properties": { "payload": { "properties": { "data": data_ref } } } }
            })
        })
        .collect();
    let defs = generator.take_definitions(true);
    let object = root.as_object_mut().expect("a root schema is an object");
    let root_defs = object
        .entry("$defs")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Value::Object(root_defs) = root_defs {
        root_defs.extend(defs);
    }
    object.insert("allOf".into(), Value::Array(conditions));
    root
}

/// The schema of a `data` part document: `{"type": "data", ...}`.
fn data_part_schema() -> Value {
    let mut schema = root_schema::<DataPart>();
    let object = schema.as_object_mut().expect("a root schema is an object");
    object.insert("title".into(), json!("DataContentPart"));
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.shift_insert(0, "type".into(), json!({ "const": "data" }));
    }
    if let Some(Value::Array(required)) = object.get_mut("required") {
        required.insert(0, json!("type"));
    }
    schema
}
