//! Hugging Face `tokenizer.json` counting (feature `hf`), on a small file the test writes.
#![cfg(feature = "hf")]

use std::sync::Arc;

use chorus_context::media::CostTable;
use chorus_context::{ContextError, HfTokenizer, TextTokenizer, TokenCounter};
use chorus_core::{Message, Role};

const WORD_LEVEL: &str = r#"{
  "version": "1.0",
  "truncation": null,
  "padding": null,
  "added_tokens": [],
  "normalizer": {"type": "Lowercase"},
  "pre_tokenizer": {"type": "Whitespace"},
  "post_processor": null,
  "decoder": null,
  "model": {"type": "WordLevel", "vocab": {"hello": 0, "world": 1, "[UNK]": 2, "!": 3}, "unk_token": "[UNK]"}
}"#;

#[test]
fn counts_with_a_tokenizer_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, WORD_LEVEL).unwrap();
    let tokenizer = HfTokenizer::from_file(&path).unwrap();
    assert_eq!(tokenizer.count("Hello world!"), 3);
    assert_eq!(tokenizer.count("hello, brave new world"), 5); // unknown words are [UNK] tokens
    assert_eq!(tokenizer.count(""), 0);
    let counter =
        TokenCounter::with_tokenizer(Arc::new(tokenizer), "some-hf-model", &CostTable::default())
            .unwrap();
    // Cookbook framing: 3 per message + the role's tokens ("user" is [UNK]: 1) + content (2).
    assert_eq!(
        counter
            .count_message(&Message::new(Role::User, "hello world"), 0)
            .unwrap()
            .total(),
        6
    );
}

#[test]
fn a_broken_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, "{\"model\": 5}").unwrap();
    let err = HfTokenizer::from_file(&path).err().unwrap();
    assert!(matches!(&err, ContextError::Tokenizer { .. }), "{err}");
    assert!(err.to_string().contains("tokenizer.json"));
}
