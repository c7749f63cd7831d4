//! Token counts of a response, read from the provider's `usage` object.

use chorus_core::TokenUsage;
use serde_json::{Map, Value};

/// The provider's names for the prompt, completion and (when it gives one) total counts.
pub struct Keys {
    /// The prompt (input) token count.
    pub prompt: &'static str,
    /// The completion (output) token count.
    pub completion: &'static str,
    /// The total, when the provider reports one.
    pub total: Option<&'static str>,
}

/// The counts named by `keys`; every other field of `usage` is kept in `extra`.
pub fn read(usage: &Map<String, Value>, keys: &Keys) -> TokenUsage {
    let mut extra = usage.clone();
    let mut take = |key: &str| extra.remove(key).and_then(|v| v.as_u64());
    let prompt_tokens = take(keys.prompt);
    let completion_tokens = take(keys.completion);
    let total_tokens = keys.total.and_then(&mut take);
    TokenUsage {
        prompt_tokens,
        completion_tokens,
        total_tokens,
        extra,
        ..TokenUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn named_counts_are_read_and_the_rest_is_kept() {
        let Value::Object(usage) =
            json!({"input_tokens": 12, "output_tokens": 3, "total_tokens": 15, "cache": 4})
        else {
            unreachable!()
        };
        let keys = Keys {
            prompt: "input_tokens",
            completion: "output_tokens",
            total: None,
        };
        let read_back = read(&usage, &keys);
        assert_eq!(read_back.prompt_tokens, Some(12));
        assert_eq!(read_back.completion_tokens, Some(3));
        assert_eq!(read_back.total_tokens, None);
        assert_eq!(
            Value::Object(read_back.extra),
            json!({"total_tokens": 15, "cache": 4})
        );
        let with_total = read(
            &usage,
            &Keys {
                total: Some("total_tokens"),
                ..keys
            },
        );
        assert_eq!(with_total.total_tokens, Some(15));
        assert_eq!(Value::Object(with_total.extra), json!({"cache": 4}));
    }
}
