//! [`Nullable`]: a field whose key may be absent, given as `null`, or given a value.
//!
//! OpenAI clients send `"content": null` on assistant tool-call messages where other clients
//! leave the key out; a round trip writes back whichever was given.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;

/// A field that is absent, `null`, or a value; absent and `null` are kept apart.
///
/// On a struct field, pair it with `#[serde(default, skip_serializing_if = "Nullable::is_absent")]`
/// so an absent key stays absent when written back.
///
/// ```
/// use chorus_core::{Content, Message, Nullable, Role};
///
/// let call: Message = serde_json::from_str(r#"{"role": "assistant", "content": null}"#)?;
/// assert_eq!(call.content, Nullable::Null);
/// assert_eq!(serde_json::to_string(&call)?, r#"{"role":"assistant","content":null}"#);
///
/// let bare: Message = serde_json::from_str(r#"{"role": "assistant"}"#)?;
/// assert!(bare.content.is_absent());
/// assert_eq!(serde_json::to_string(&bare)?, r#"{"role":"assistant"}"#);
///
/// let hi = Message::new(Role::User, "hi");
/// assert_eq!(hi.content, Nullable::Value(Content::Text("hi".into())));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Nullable<T> {
    /// The key is not there.
    #[default]
    Absent,
    /// The key is there with `null`.
    Null,
    /// The key is there with a value.
    Value(T),
}

impl<T> Nullable<T> {
    /// `Value` for `Some`, `Null` for `None` (as a present key reads).
    pub fn from_option(value: Option<T>) -> Self {
        value.map_or(Nullable::Null, Nullable::Value)
    }

    /// Whether the key is not there (for `skip_serializing_if`).
    pub fn is_absent(&self) -> bool {
        matches!(self, Nullable::Absent)
    }

    /// Whether the key is there with `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Nullable::Null)
    }

    /// The value, if one was given (absent and `null` both give `None`).
    pub fn value(&self) -> Option<&T> {
        match self {
            Nullable::Value(value) => Some(value),
            Nullable::Absent | Nullable::Null => None,
        }
    }

    /// The value to change in place, if one was given.
    pub fn value_mut(&mut self) -> Option<&mut T> {
        match self {
            Nullable::Value(value) => Some(value),
            Nullable::Absent | Nullable::Null => None,
        }
    }

    /// The value to change in place, first set to `make()` when absent or `null`.
    pub fn get_or_insert_with(&mut self, make: impl FnOnce() -> T) -> &mut T {
        if !matches!(self, Nullable::Value(_)) {
            *self = Nullable::Value(make());
        }
        match self {
            Nullable::Value(value) => value,
            Nullable::Absent | Nullable::Null => unreachable!("set to a value just above"),
        }
    }

    /// The value, if one was given, consuming the field.
    pub fn into_value(self) -> Option<T> {
        match self {
            Nullable::Value(value) => Some(value),
            Nullable::Absent | Nullable::Null => None,
        }
    }

    /// Takes the field out, leaving it absent.
    pub fn take(&mut self) -> Self {
        std::mem::take(self)
    }
}

/// A value is written as itself, `null` as `null`; an absent field is skipped by its struct
/// (`skip_serializing_if`), and written as `null` when it is not.
impl<T: Serialize> Serialize for Nullable<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Nullable::Value(value) => value.serialize(serializer),
            Nullable::Absent | Nullable::Null => serializer.serialize_none(),
        }
    }
}

/// A present key reads as `Null` or `Value`; an absent one is the struct field's `default`.
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nullable<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Option::<T>::deserialize(deserializer).map(Nullable::from_option)
    }
}

/// `T`, or `null` kept as given; written inline where the field is.
impl<T: JsonSchema> JsonSchema for Nullable<T> {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        format!("Nullable_{}", T::schema_name()).into()
    }

    fn schema_id() -> Cow<'static, str> {
        format!("chorus_core::Nullable<{}>", T::schema_id()).into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let inner = generator.subschema_for::<T>();
        json_schema!({ "anyOf": [inner, { "const": null }] })
    }
}

#[cfg(test)]
mod tests {
    use super::Nullable;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(default, skip_serializing_if = "Nullable::is_absent")]
        field: Nullable<Vec<u8>>,
    }

    #[test]
    fn absent_null_and_value_read_and_write_back_as_given() {
        for (json, expected) in [
            ("{}", Nullable::Absent),
            (r#"{"field":null}"#, Nullable::Null),
            (r#"{"field":[1,2]}"#, Nullable::Value(vec![1, 2])),
        ] {
            let holder: Holder = serde_json::from_str(json).unwrap();
            assert_eq!(holder.field, expected, "{json}");
            assert_eq!(serde_json::to_string(&holder).unwrap(), json);
        }
    }

    #[test]
    fn a_wrong_value_is_refused_not_read_as_null() {
        assert!(serde_json::from_str::<Holder>(r#"{"field":"x"}"#).is_err());
    }

    #[test]
    fn accessors_see_only_a_given_value() {
        let mut field = Nullable::Value(3);
        assert_eq!(field.value(), Some(&3));
        *field.value_mut().unwrap() = 4;
        assert_eq!(field.take().into_value(), Some(4));
        assert!(field.is_absent());
        field = Nullable::Null;
        *field.get_or_insert_with(|| 5) += 1;
        assert_eq!(field, Nullable::Value(6));
        *field.get_or_insert_with(|| 0) += 1;
        assert_eq!(field, Nullable::Value(7));
        assert_eq!(Nullable::<u8>::Null.value(), None);
        assert!(Nullable::<u8>::Null.is_null());
    }
}
