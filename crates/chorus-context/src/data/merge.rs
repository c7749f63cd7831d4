//! Merging data parts by identity (seed 004): `kind`, refined by `_instance`.
//!
//! Objects merge deeply and later values win. **Arrays are replaced as a whole** by a later
//! array (they are not concatenated or merged by index), so a state patch can shrink a list;
//! a later `null` sets the value to `null`. `description` and `schema` are taken from the
//! latest part that has them.

use chorus_core::{DataPart, Message};
use serde_json::Value;

/// All data parts of one identity merged into one.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedData {
    /// The `kind`.
    pub kind: Option<String>,
    /// The `_instance`.
    pub instance: Option<Value>,
    /// The merged data.
    pub data: Value,
    /// The latest description.
    pub description: Option<String>,
    /// The latest schema.
    pub schema: Option<Value>,
}

impl MergedData {
    fn from_part(part: &DataPart) -> Self {
        MergedData {
            kind: part.kind.clone(),
            instance: part.instance.clone(),
            data: part.data.clone(),
            description: part.description.clone(),
            schema: part.schema.clone(),
        }
    }

    fn absorb(&mut self, part: &DataPart) {
        deep_merge(&mut self.data, &part.data);
        if part.description.is_some() {
            self.description.clone_from(&part.description);
        }
        if part.schema.is_some() {
            self.schema.clone_from(&part.schema);
        }
    }

    /// The merged data as one data part.
    pub fn to_part(&self) -> DataPart {
        DataPart {
            kind: self.kind.clone(),
            data: self.data.clone(),
            schema: self.schema.clone(),
            description: self.description.clone(),
            instance: self.instance.clone(),
            extra: Default::default(),
        }
    }
}

/// Merges `later` into `base`: objects key by key, recursively; anything else is replaced.
pub fn deep_merge(base: &mut Value, later: &Value) {
    match (base, later) {
        (Value::Object(base), Value::Object(later)) => {
            for (key, value) in later {
                match base.get_mut(key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, later) => *base = later.clone(),
    }
}

/// Merges parts in order; identities appear in the order they were first seen.
pub fn merge_parts<'a>(parts: impl IntoIterator<Item = &'a DataPart>) -> Vec<MergedData> {
    let mut merged: Vec<MergedData> = Vec::new();
    for part in parts {
        let found = merged
            .iter_mut()
            .find(|m| (m.kind.as_deref(), m.instance.as_ref()) == part.identity());
        match found {
            Some(m) => m.absorb(part),
            None => merged.push(MergedData::from_part(part)),
        }
    }
    merged
}

/// The data parts of `messages`, in order.
pub fn data_parts(messages: &[Message]) -> impl Iterator<Item = &DataPart> {
    messages
        .iter()
        .flat_map(|m| match m.content() {
            Some(chorus_core::Content::Parts(parts)) => parts.as_slice(),
            _ => &[],
        })
        .filter_map(|p| match p {
            chorus_core::ContentPart::Data(d) => Some(d),
            _ => None,
        })
}

/// The current merged data of `kind` (and `instance`) in `messages`.
pub fn current(messages: &[Message], kind: &str, instance: Option<&Value>) -> Option<MergedData> {
    let parts = data_parts(messages)
        .filter(|d| d.kind.as_deref() == Some(kind) && d.instance.as_ref() == instance);
    merge_parts(parts).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn part(kind: &str, data: Value, instance: Option<Value>) -> DataPart {
        DataPart {
            kind: Some(kind.into()),
            data,
            instance,
            ..DataPart::default()
        }
    }

    #[test]
    fn merges_deeply_later_wins_arrays_replaced() {
        let mut base = json!({"a": {"b": 1, "c": [1, 2, 3]}, "d": 1});
        deep_merge(&mut base, &json!({"a": {"c": [9], "e": true}, "d": null}));
        assert_eq!(base, json!({"a": {"b": 1, "c": [9], "e": true}, "d": null}));
    }

    #[test]
    fn instance_refines_identity() {
        let parts = [
            part("state", json!({"x": 1}), None),
            part("state", json!({"x": 2}), Some(json!("a"))),
            part("state", json!({"y": 3}), None),
            part("input", json!({"q": "?"}), None),
        ];
        let merged = merge_parts(&parts);
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0].data, json!({"x": 1, "y": 3}));
        assert_eq!(merged[1].data, json!({"x": 2}));
        assert_eq!(merged[2].kind.as_deref(), Some("input"));
    }
}
