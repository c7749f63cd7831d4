//! The length of Python's `repr()` of JSON values, which LangChain's approximate counter measures.

use serde_json::Value;

/// Number of characters (code points) of Python's `repr()` of `value` read as Python objects.
pub(crate) fn repr_len(value: &Value) -> usize {
    match value {
        Value::Null => 4, // None
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        } // True / False
        Value::Number(n) => number_repr_len(n),
        Value::String(s) => str_repr_len(s),
        Value::Array(items) => {
            // [a, b]
            2 + items.iter().map(repr_len).sum::<usize>() + items.len().saturating_sub(1) * 2
        }
        Value::Object(map) => {
            // {'k': v, 'k2': v2}
            2 + map
                .iter()
                .map(|(k, v)| str_repr_len(k) + 2 + repr_len(v))
                .sum::<usize>()
                + map.len().saturating_sub(1) * 2
        }
    }
}

fn number_repr_len(n: &serde_json::Number) -> usize {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or_default();
        // Python prints floats with the shortest round-trip digits and always a `.0` or exponent.
        let text = format!("{f:?}");
        text.chars().count()
    } else {
        n.to_string().len()
    }
}

/// Length of Python's `repr()` of a `str`: quotes plus escapes.
pub(crate) fn str_repr_len(s: &str) -> usize {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    2 + s
        .chars()
        .map(|c| match c {
            '\\' | '\n' | '\r' | '\t' => 2,
            c if c == quote => 2,
            c if (c as u32) < 0x20 || c as u32 == 0x7f => 4, // \xNN
            c if (0x80..0xa0).contains(&(c as u32)) => 4,
            _ => 1,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_python_repr_lengths() {
        // repr({'type': 'text', 'text': "it's"}) == "{'type': 'text', 'text': \"it's\"}"
        let v = json!({"type": "text", "text": "it's"});
        assert_eq!(repr_len(&v), "{'type': 'text', 'text': \"it's\"}".len());
        // repr([1, True, None, 'a\nb']) == "[1, True, None, 'a\\nb']"
        let v = json!([1, true, null, "a\nb"]);
        assert_eq!(repr_len(&v), "[1, True, None, 'a\\nb']".len());
        assert_eq!(repr_len(&json!(1.5)), 3);
        assert_eq!(repr_len(&json!({})), 2);
    }
}

/// Number of characters of Python's `json.dumps(value)` with its defaults
/// (`", "` and `": "` separators, `ensure_ascii=True`).
pub(crate) fn json_dumps_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => value.to_string().len(),
        Value::String(s) => json_str_len(s),
        Value::Array(items) => {
            2 + items.iter().map(json_dumps_len).sum::<usize>() + items.len().saturating_sub(1) * 2
        }
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| json_str_len(k) + 2 + json_dumps_len(v))
                .sum::<usize>()
                + map.len().saturating_sub(1) * 2
        }
    }
}

fn json_str_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c if (c as u32) < 0x80 => 1,
            c if (c as u32) < 0x10000 => 6,
            _ => 12,
        })
        .sum::<usize>()
}

#[cfg(test)]
mod dumps_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_python_json_dumps_lengths() {
        // json.dumps({"a": [1, "é"]}) == '{"a": [1, "\\u00e9"]}'
        assert_eq!(
            json_dumps_len(&json!({"a": [1, "é"]})),
            r#"{"a": [1, "\u00e9"]}"#.len()
        );
        assert_eq!(json_dumps_len(&json!("a\"b")), 6);
    }
}
