//! Unknown fields: kept verbatim by open formats, stashed under `x-<format>` by the others.

use serde_json::{Map, Value};

use crate::Format;
use crate::common::json::child;
use crate::loss::{Losses, Policy};

/// A key of a format's namespace that records how the input was written (Gemini's key
/// spelling), not what it said: never written as a field and never reported as a loss.
pub const SPELLING: &str = "$spelling";

/// The key of `extra` under which `format` keeps fields chorus has no place for.
pub fn namespace(format: Format) -> String {
    format!("x-{}", format.id())
}

/// Stashes a decoded item's unknown fields under the format's namespace (nothing when empty).
pub fn stash(extra: &mut Map<String, Value>, format: Format, unknown: Map<String, Value>) {
    if !unknown.is_empty() {
        extra.insert(namespace(format), Value::Object(unknown));
    }
}

/// The fields of `extra` that `target` can write: its own namespace unpacked and, for open
/// targets, every key that is not another format's namespace. Everything else is a loss.
pub fn for_target(
    extra: &Map<String, Value>,
    target: Format,
    pointer: &str,
    losses: &mut Losses,
) -> Map<String, Value> {
    let mut out = Map::new();
    let own = namespace(target);
    for (key, value) in extra {
        if *key == own
            && let Value::Object(fields) = value
        {
            out.extend(
                fields
                    .iter()
                    .filter(|(k, _)| *k != SPELLING)
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
            continue;
        }
        let only_form = value
            .as_object()
            .is_some_and(|fields| fields.keys().all(|k| k == SPELLING));
        if let Some(other) = Format::ALL
            .iter()
            .find(|f| **f != target && namespace(**f) == *key)
        {
            if only_form {
                continue;
            }
            losses.push(
                child(pointer, key),
                Policy::Dropped,
                format!(
                    "fields of {} that {} has no place for",
                    other.id(),
                    target.id()
                ),
            );
        } else if target.is_open() {
            out.insert(key.clone(), value.clone());
        } else {
            losses.push(
                child(pointer, key),
                Policy::Dropped,
                format!("{} has no field `{key}`", target.id()),
            );
        }
    }
    out
}

/// Like [`for_target`], merging the writable fields into `into` without replacing known keys.
pub fn merge_into(
    into: &mut Map<String, Value>,
    extra: &Map<String, Value>,
    target: Format,
    pointer: &str,
    losses: &mut Losses,
) {
    if extra.is_empty() {
        return;
    }
    for (key, value) in for_target(extra, target, pointer, losses) {
        into.entry(key).or_insert(value);
    }
}

/// Reports every field of `extra` as dropped: the target has no place for any of them.
pub fn drop_all(extra: &Map<String, Value>, pointer: &str, holder: &str, losses: &mut Losses) {
    for key in extra.keys() {
        losses.push(
            child(pointer, key),
            Policy::Dropped,
            format!("{holder} has no field `{key}`"),
        );
    }
}

/// The `extra` map of a content part (an unknown part is its own map).
pub fn part_extra(part: &mut chorus_core::ContentPart) -> &mut Map<String, Value> {
    use chorus_core::ContentPart;
    match part {
        ContentPart::Text(p) => &mut p.extra,
        ContentPart::Reasoning(p) => &mut p.extra,
        ContentPart::Image(p) => &mut p.extra,
        ContentPart::Audio(p) => &mut p.extra,
        ContentPart::File(p) => &mut p.extra,
        ContentPart::Data(p) => &mut p.extra,
        ContentPart::Other(map) => map,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn own_namespace_is_unpacked_and_foreign_ones_are_losses() {
        let extra = json!({"x-anthropic": {"cache_control": {"type": "ephemeral"}},
                           "x-qwen3": {"thought": true}, "custom": 1});
        let mut losses = Losses::default();
        let out = for_target(
            extra.as_object().unwrap(),
            Format::Anthropic,
            "/m",
            &mut losses,
        );
        assert_eq!(
            Value::Object(out),
            json!({"cache_control": {"type": "ephemeral"}})
        );
        let losses = losses.finish(()).losses;
        let paths: Vec<_> = losses.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, ["/m/x-qwen3", "/m/custom"]);
    }

    #[test]
    fn open_targets_keep_plain_unknown_keys() {
        let extra = json!({"custom": 1, "x-anthropic": {"a": 1}});
        let mut losses = Losses::default();
        let out = for_target(
            extra.as_object().unwrap(),
            Format::OpenAiChat,
            "",
            &mut losses,
        );
        assert_eq!(Value::Object(out), json!({"custom": 1}));
        assert_eq!(losses.finish(()).losses.len(), 1);
    }
}
