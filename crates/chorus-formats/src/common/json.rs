//! Reading provider JSON with JSON-pointer errors.

use serde_json::{Map, Value};

use chorus_core::Problem;

use crate::loss::pointer_segment;

/// Parses JSON text; a syntax error is a problem of the whole document that names its
/// `line:column`.
pub fn parse(input: &str) -> Result<Value, Problem> {
    serde_json::from_str(input).map_err(|e| {
        let text = e.to_string();
        let reason = text.split(" at line ").next().unwrap_or(&text);
        let found = format!("{reason} at `{}:{}`", e.line(), e.column());
        Problem::expected("", "valid JSON", found)
    })
}

/// How a JSON value is described in error messages.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) if s.len() <= 40 => format!("the string {s:?}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// `pointer` extended by one key.
pub fn child(pointer: &str, key: &str) -> String {
    format!("{pointer}/{}", pointer_segment(key))
}

/// `pointer` extended by one index.
pub fn item(pointer: &str, index: usize) -> String {
    format!("{pointer}/{index}")
}

/// The value as an object.
pub fn object<'a>(value: &'a Value, pointer: &str) -> Result<&'a Map<String, Value>, Problem> {
    value
        .as_object()
        .ok_or_else(|| Problem::expected(pointer, "an object", describe(value)))
}

/// The value as an array.
pub fn array<'a>(value: &'a Value, pointer: &str) -> Result<&'a Vec<Value>, Problem> {
    value
        .as_array()
        .ok_or_else(|| Problem::expected(pointer, "an array", describe(value)))
}

/// A required string field.
pub fn string<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    pointer: &str,
) -> Result<&'a str, Problem> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(Problem::expected(
            child(pointer, key),
            "a string",
            describe(other),
        )),
        None => Err(Problem::expected(
            child(pointer, key),
            format!("a string field `{key}`"),
            "nothing",
        )),
    }
}

/// An optional string field (`null` counts as absent).
pub fn opt_string<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    pointer: &str,
) -> Result<Option<&'a str>, Problem> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(Some(s)),
        None | Some(Value::Null) => Ok(None),
        Some(other) => Err(Problem::expected(
            child(pointer, key),
            "a string",
            describe(other),
        )),
    }
}

/// A required field of any type.
pub fn field<'a>(
    map: &'a Map<String, Value>,
    key: &str,
    pointer: &str,
) -> Result<&'a Value, Problem> {
    map.get(key).ok_or_else(|| {
        Problem::expected(child(pointer, key), format!("a field `{key}`"), "nothing")
    })
}

/// The keys of `map` not in `known`, as a new map.
pub fn unknown_keys(map: &Map<String, Value>, known: &[&str]) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Deserializes a serde type from a value, with the error placed under `pointer`.
pub fn typed<T: serde::de::DeserializeOwned>(
    value: &Value,
    pointer: &str,
    expected: &str,
) -> Result<T, Problem> {
    serde_json::from_value(value.clone())
        .map_err(|e| Problem::expected(pointer, expected, format!("{} ({e})", describe(value))))
}

/// Deserializes a chorus type, placing an error at its JSON pointer below `base`.
pub fn chorus_value<T: serde::de::DeserializeOwned>(
    value: Value,
    base: &str,
) -> Result<T, Problem> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let pointer = format!("{base}{}", pointer_of(e.path()));
        let inner = e.into_inner();
        let mut err = Problem::expected(pointer, "a valid chorus value", inner.to_string());
        if inner.to_string().contains("arguments") || inner.to_string().contains("expected a string") {
            err = err.with_hint("tool-call `arguments` must be a JSON string, e.g. \"{\\\"city\\\":\\\"Paris\\\"}\", not an object");
        }
        err
    })
}

fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => out.push_str(&format!("/{}", pointer_segment(key))),
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

/// Pointers `base/0`, `base/1`, … written into one reused buffer (hot loops).
pub struct Items {
    buf: String,
    base: usize,
}

impl Items {
    /// Pointers to the items of the array at `base`.
    pub fn new(base: &str) -> Self {
        let mut buf = String::with_capacity(base.len() + 8);
        buf.push_str(base);
        Items {
            buf,
            base: base.len(),
        }
    }

    /// The pointer of item `index`.
    pub fn at(&mut self, index: usize) -> &str {
        use std::fmt::Write as _;
        self.buf.truncate(self.base);
        let _ = write!(self.buf, "/{index}");
        &self.buf
    }
}
