//! Serde helper for fields where `null` and an absent key must stay different.
//!
//! Use with `Option<Option<T>>`: an absent key is `None`, `null` is `Some(None)`.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Serializes `Some(inner)` as `inner` (so `Some(None)` becomes `null`).
pub fn serialize<T: Serialize, S: Serializer>(
    value: &Option<Option<T>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(inner) => inner.serialize(serializer),
        None => serializer.serialize_none(),
    }
}

/// Deserializes a present key (value or `null`) as `Some(..)`.
pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The schema of a field that may be `null`: `T`, or `null` kept as given.
pub fn schema<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    let inner = generator.subschema_for::<T>();
    json_schema!({ "anyOf": [inner, { "const": null }] })
}
