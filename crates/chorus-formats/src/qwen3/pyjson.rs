//! JSON written as Python's `json.dumps(x, ensure_ascii=False)` writes it (", " and ": ").

use serde::Serialize;
use serde_json::ser::{Formatter, Serializer};
use std::io::{self, Write};

struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }
}

/// `value` as Python's `json.dumps` writes it: keys in order, raw non-ASCII, `, ` and `: `.
pub fn dumps<T: Serialize>(value: &T) -> String {
    let mut out = Vec::new();
    let mut serializer = Serializer::with_formatter(&mut out, PythonFormatter);
    // Serializing a serde_json-compatible value into memory cannot fail.
    let _ = value.serialize(&mut serializer);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_python_separators_and_raw_unicode() {
        let value = json!({"name": "météo", "a": [1, 2.5, null, true], "s": "<b>\"q\"\n\u{1}"});
        assert_eq!(
            dumps(&value),
            r#"{"name": "météo", "a": [1, 2.5, null, true], "s": "<b>\"q\"\n\u0001"}"#
        );
    }
}
