//! Content parts: the atoms of a multimodal message (seed 000, A.1.2; seed 004 data parts).

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::media::{FileRef, ImageUrl, InputAudio, VideoMetadata};

/// One addressable piece of message content; unknown part types are kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentPart {
    /// `{"type":"text"}`: plain text.
    Text(TextPart),
    /// `{"type":"reasoning"}`: the model's chain of thought (Harmony's analysis channel).
    Reasoning(ReasoningPart),
    /// `{"type":"image_url"}`: an image or a video frame.
    Image(ImagePart),
    /// `{"type":"input_audio"}`: inline audio.
    Audio(AudioPart),
    /// `{"type":"file"}`: a file or document.
    File(FilePart),
    /// `{"type":"data"}`: persistent structured data (seed 004).
    Data(DataPart),
    /// A part type chorus does not know, kept as given.
    Other(Map<String, Value>),
}

/// The part type names chorus knows, as written in `type`.
const KNOWN_PART_TYPES: [&str; 6] = [
    "text",
    "reasoning",
    "image_url",
    "input_audio",
    "file",
    "data",
];

/// Text with an optional position index.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Position of this part among the message's parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Reasoning text, with the provider's signature when it has one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReasoningPart {
    /// The reasoning text.
    pub text: String,
    /// Opaque provider signature that must travel with the reasoning (Anthropic thinking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An image; with `video_metadata` it is a frame of a video.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImagePart {
    /// The image reference.
    pub image_url: ImageUrl,
    /// Set when the image is a frame taken from a video.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_metadata: Option<VideoMetadata>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Inline audio input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AudioPart {
    /// The audio payload.
    pub input_audio: InputAudio,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A file or document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FilePart {
    /// The file reference.
    pub file: FileRef,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Persistent, self-describing data merged by identity (seed 004).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DataPart {
    /// Role of the data, e.g. `input` or `state`; the first part of its identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Any JSON value.
    pub data: Value,
    /// JSON Schema describing `data` to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// What the data means, shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Batch instance this data belongs to; refines the identity.
    #[serde(rename = "_instance", default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<Value>,
    /// Keys this type does not know, kept as given.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DataPart {
    /// The identity used for merging: `kind` refined by `_instance`.
    pub fn identity(&self) -> (Option<&str>, Option<&Value>) {
        (self.kind.as_deref(), self.instance.as_ref())
    }
}

impl ContentPart {
    /// The `type` string of this part.
    pub fn type_name(&self) -> &str {
        match self {
            ContentPart::Text(_) => "text",
            ContentPart::Reasoning(_) => "reasoning",
            ContentPart::Image(_) => "image_url",
            ContentPart::Audio(_) => "input_audio",
            ContentPart::File(_) => "file",
            ContentPart::Data(_) => "data",
            ContentPart::Other(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// A text part holding `text`.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text(TextPart {
            text: text.into(),
            ..TextPart::default()
        })
    }

    /// The text of a text part, `None` for every other part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentPart::Text(part) => Some(&part.text),
            _ => None,
        }
    }
}

/// Serializes a part struct with its `type` tag in front.
#[derive(Serialize)]
struct Tagged<'a, T> {
    #[serde(rename = "type")]
    type_name: &'static str,
    #[serde(flatten)]
    inner: &'a T,
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn tagged<T: Serialize, S: Serializer>(
            type_name: &'static str,
            inner: &T,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            Tagged { type_name, inner }.serialize(serializer)
        }
        match self {
            ContentPart::Text(p) => tagged("text", p, serializer),
            ContentPart::Reasoning(p) => tagged("reasoning", p, serializer),
            ContentPart::Image(p) => tagged("image_url", p, serializer),
            ContentPart::Audio(p) => tagged("input_audio", p, serializer),
            ContentPart::File(p) => tagged("file", p, serializer),
            ContentPart::Data(p) => tagged("data", p, serializer),
            ContentPart::Other(map) => map.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::deserialize(deserializer)?;
        let type_name = match map.get("type") {
            Some(Value::String(name)) if KNOWN_PART_TYPES.contains(&name.as_str()) => name.clone(),
            Some(Value::String(_)) => return Ok(ContentPart::Other(map)),
            Some(_) => return Err(D::Error::custom("content part `type` must be a string")),
            None => return Err(D::Error::missing_field("type")),
        };
        map.remove("type");
        let body = Value::Object(map);
        let part = match type_name.as_str() {
            "text" => TextPart::deserialize(body).map(ContentPart::Text),
            "reasoning" => ReasoningPart::deserialize(body).map(ContentPart::Reasoning),
            "image_url" => ImagePart::deserialize(body).map(ContentPart::Image),
            "input_audio" => AudioPart::deserialize(body).map(ContentPart::Audio),
            "file" => FilePart::deserialize(body).map(ContentPart::File),
            _ => DataPart::deserialize(body).map(ContentPart::Data),
        };
        part.map_err(|e| D::Error::custom(format!("{type_name} part: {e}")))
    }
}

impl JsonSchema for ContentPart {
    fn schema_name() -> Cow<'static, str> {
        "ContentPart".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let variants = [
            ("text", generator.subschema_for::<TextPart>()),
            ("reasoning", generator.subschema_for::<ReasoningPart>()),
            ("image_url", generator.subschema_for::<ImagePart>()),
            ("input_audio", generator.subschema_for::<AudioPart>()),
            ("file", generator.subschema_for::<FilePart>()),
            ("data", generator.subschema_for::<DataPart>()),
        ];
        let branches: Vec<Value> = variants
            .into_iter()
            .map(|(name, schema)| {
                serde_json::json!({
                    "if": { "properties": { "type": { "const": name } } },
                    "then": schema
                })
            })
            .collect();
        json_schema!({
            "description": "A content part, tagged by `type`; unknown types are allowed and kept.",
            "type": "object",
            "required": ["type"],
            "properties": { "type": { "type": "string" } },
            "allOf": branches
        })
    }
}
