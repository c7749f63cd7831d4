//! Ids that may appear in paths, headers and event streams: a safe alphabet, bounded length.

use crate::error::ApiError;

/// Longest id accepted, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// The ids [`id_problem`] accepts, as a regular expression for the OpenAPI document.
pub const SAFE_ID_PATTERN: &str = "^[A-Za-z0-9_:-]{1,128}$";

/// Why `id` cannot be used as an agent or message id over HTTP, if it cannot.
pub fn id_problem(id: &str) -> Option<String> {
    if id.is_empty() {
        return Some("is empty".into());
    }
    if id.len() > MAX_ID_LEN {
        return Some(format!("is longer than {MAX_ID_LEN} bytes"));
    }
    id.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':')))
        .map(|c| format!("contains {c:?}"))
}

/// Refuses (400) an id that could inject a path segment, a header line or an event field.
pub fn check_id(what: impl std::fmt::Display, id: &str) -> Result<(), ApiError> {
    match id_problem(id) {
        None => Ok(()),
        Some(why) => Err(ApiError::bad_request(
            "bad_id",
            format!(
                "{what} {:?} {why}; ids use ASCII letters, digits, `_`, `-` or `:` (at most {MAX_ID_LEN} bytes)",
                id.escape_debug().to_string()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_ids_pass_and_injections_do_not() {
        for ok in ["alice", "task-1", "urn:chorus:m-42", "A_b"] {
            assert_eq!(id_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "../etc",
            "a/b",
            "a\r\nX-Evil: 1",
            "a b",
            "a%2Fb",
            "a?x",
            "m.1",
            &"x".repeat(129),
        ] {
            assert!(id_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn the_documented_pattern_accepts_what_the_check_accepts() {
        let pattern = regex::Regex::new(SAFE_ID_PATTERN).unwrap();
        let long = "x".repeat(128);
        let longer = "x".repeat(129);
        for id in [
            "alice",
            "task-1",
            "urn:chorus:m-42",
            "A_b",
            &long,
            &longer,
            "",
            "../etc",
            "a b",
            "m.1",
            "é",
            "a\n",
        ] {
            assert_eq!(pattern.is_match(id), id_problem(id).is_none(), "{id:?}");
        }
    }
}
