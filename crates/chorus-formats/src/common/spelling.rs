//! Key spelling: Google's JSON takes every field as `snake_case` or as `lowerCamelCase`.

use serde_json::{Map, Value};

/// `snake_case` → `lowerCamelCase` (`max_output_tokens` → `maxOutputTokens`).
pub fn to_camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The key under which `map` holds the field `snake`: as given in snake_case, else in camelCase.
pub fn key_of(map: &Map<String, Value>, snake: &str) -> Option<String> {
    if map.contains_key(snake) {
        return Some(snake.to_owned());
    }
    let camel = to_camel(snake);
    map.contains_key(&camel).then_some(camel)
}

/// Removes the field `snake` (in either spelling) from `map`.
pub fn take(map: &mut Map<String, Value>, snake: &str) -> Option<Value> {
    let key = key_of(map, snake)?;
    map.shift_remove(&key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_spellings_are_found() {
        assert_eq!(to_camel("max_output_tokens"), "maxOutputTokens");
        assert_eq!(to_camel("text"), "text");
        let mut map = json!({"topP": 1, "top_k": 2}).as_object().unwrap().clone();
        assert_eq!(key_of(&map, "top_p").as_deref(), Some("topP"));
        assert_eq!(take(&mut map, "top_k"), Some(json!(2)));
        assert!(key_of(&map, "seed").is_none());
    }
}
