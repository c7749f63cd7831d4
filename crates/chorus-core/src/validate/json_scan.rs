//! Parses JSON bytes into a value while enforcing limits the JSON grammar allows to be broken:
//! duplicate keys, nesting depth and document size. Errors name the JSON pointer where they occur.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

use crate::handoff::escape_pointer;
use crate::problem::Problem;

/// Size and depth limits for one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of arrays and objects (default 64, at most [`Limits::MAX_DEPTH`]).
    pub max_depth: usize,
    /// Largest document in bytes (default 16 MiB).
    pub max_bytes: usize,
}

impl Limits {
    /// The highest depth limit that can be configured (keeps the parser's stack bounded).
    pub const MAX_DEPTH: usize = 512;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: 64,
            max_bytes: 16 * 1024 * 1024,
        }
    }
}

/// Collects where an error happened: each level adds its key or index while the error
/// unwinds, so the parse allocates nothing for pointers when the document is fine.
struct Cursor {
    unwound: RefCell<Vec<String>>,
    problem: RefCell<Option<Problem>>,
    max_depth: usize,
}

impl Cursor {
    /// The pointer of the error, from the segments added while unwinding.
    fn pointer(&self) -> String {
        self.unwound
            .borrow()
            .iter()
            .rev()
            .map(|t| format!("/{t}"))
            .collect()
    }

    /// Records the segment of the level an error passes through.
    fn unwind<'a, E>(&'a self, segment: impl FnOnce() -> String + 'a) -> impl FnOnce(E) -> E + 'a {
        move |error| {
            self.unwound.borrow_mut().push(segment());
            error
        }
    }

    fn fail<E: de::Error>(&self, problem: Problem) -> E {
        let message = problem.message.clone();
        *self.problem.borrow_mut() = Some(problem);
        E::custom(message)
    }
}

/// Parses `bytes` as one JSON document within `limits`.
pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Value, Problem> {
    if bytes.len() > limits.max_bytes {
        return Err(Problem::error(
            "",
            format!(
                "expected a document of at most {} bytes, found {} bytes",
                limits.max_bytes,
                bytes.len()
            ),
        )
        .with_hint("raise the size limit (--max-bytes) if such documents are expected"));
    }
    let cursor = Cursor {
        unwound: RefCell::new(Vec::new()),
        problem: RefCell::new(None),
        max_depth: limits.max_depth.min(Limits::MAX_DEPTH),
    };
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    deserializer.disable_recursion_limit();
    let seed = ValueSeed {
        cursor: &cursor,
        depth: 0,
    };
    let result = seed.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    result.map_err(|error| {
        let pointer = cursor.pointer();
        match cursor.problem.borrow_mut().take() {
            Some(problem) => Problem { pointer, ..problem },
            None => syntax_problem(&error, pointer),
        }
    })
}

fn syntax_problem(error: &serde_json::Error, pointer: String) -> Problem {
    use serde_json::error::Category;
    let position = format!("line {}, column {}", error.line(), error.column());
    let text = error.to_string();
    let reason = text.split(" at line ").next().unwrap_or(&text);
    match error.classify() {
        Category::Eof => Problem::error(
            pointer,
            format!("expected more JSON, found the end of the input at {position}"),
        )
        .with_hint("the document looks truncated"),
        _ if reason.contains("unicode") || reason.contains("UTF-8") => Problem::error(
            pointer,
            format!("expected valid UTF-8 text, found {reason} at {position}"),
        )
        .with_hint("save the file as UTF-8"),
        _ => Problem::error(
            pointer,
            format!("expected valid JSON, found {reason} at {position}"),
        )
        .with_hint(
            "look just before that place: a missing comma or quote, a trailing comma, or a comment",
        ),
    }
}

struct ValueSeed<'c> {
    cursor: &'c Cursor,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl ValueSeed<'_> {
    fn enter<E: de::Error>(&self) -> Result<ValueSeed<'_>, E> {
        let depth = self.depth + 1;
        if depth > self.cursor.max_depth {
            return Err(self.cursor.fail(
                Problem::error(
                    "",
                    format!(
                        "expected nesting of at most {} levels, found deeper nesting",
                        self.cursor.max_depth
                    ),
                )
                .with_hint("raise the depth limit (--max-depth) if such documents are expected"),
            ));
        }
        Ok(ValueSeed {
            cursor: self.cursor,
            depth,
        })
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let seed = ValueSeed {
                cursor: inner.cursor,
                depth: inner.depth,
            };
            let index = items.len();
            match seq
                .next_element_seed(seed)
                .map_err(self.cursor.unwind(|| index.to_string()))?
            {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let seed = ValueSeed {
                cursor: inner.cursor,
                depth: inner.depth,
            };
            let value = access
                .next_value_seed(seed)
                .map_err(self.cursor.unwind(|| escape_pointer(&key)))?;
            match map.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(slot) => {
                    let key = slot.key().clone();
                    self.cursor.unwound.borrow_mut().push(escape_pointer(&key));
                    return Err(self.cursor.fail(
                        Problem::error(
                            "",
                            format!("expected each key once in an object, found `{key}` twice"),
                        )
                        .with_hint("JSON readers disagree on which duplicate wins; keep one"),
                    ));
                }
            }
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_default(text: &str) -> Result<Value, Problem> {
        parse(text.as_bytes(), &Limits::default())
    }

    #[test]
    fn parses_ordinary_json() {
        let value = parse_default(r#"{"a": [1, -2, 3.5, "x", null, true], "b": {}}"#).unwrap();
        assert_eq!(value["a"][2], serde_json::json!(3.5));
        assert_eq!(value["b"], serde_json::json!({}));
    }

    #[test]
    fn duplicate_keys_are_rejected_at_their_pointer() {
        let problem = parse_default(r#"{"a": {"b/c": 1, "b/c": 2}}"#).unwrap_err();
        assert_eq!(problem.pointer, "/a/b~1c");
        assert!(problem.message.contains("twice"), "{problem}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let problem = parse_default(&deep).unwrap_err();
        assert!(problem.message.contains("at most 64 levels"), "{problem}");
        assert_eq!(problem.pointer, "/0".repeat(64));
    }

    #[test]
    fn truncated_input_names_its_position() {
        let problem = parse_default(r#"{"role": "user", "content": ["#).unwrap_err();
        assert_eq!(problem.pointer, "/content/0");
        assert_eq!(
            problem.hint.as_deref(),
            Some("the document looks truncated")
        );
    }

    #[test]
    fn invalid_utf8_and_oversize_are_errors() {
        let problem = parse(b"{\"a\": \"\xff\"}", &Limits::default()).unwrap_err();
        assert!(
            problem.message.contains("UTF-8") || problem.message.contains("unicode"),
            "{problem}"
        );
        let small = Limits {
            max_bytes: 4,
            ..Limits::default()
        };
        assert!(
            parse(b"[1, 2]", &small)
                .unwrap_err()
                .message
                .contains("at most 4 bytes")
        );
    }

    #[test]
    fn trailing_garbage_is_rejected() {
        assert!(parse_default("{} x").is_err());
    }
}
