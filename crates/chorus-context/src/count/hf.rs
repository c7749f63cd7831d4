//! Hugging Face `tokenizer.json` files as a [`TextTokenizer`] (cargo feature `hf`).

use std::path::Path;

use super::text::TextTokenizer;
use crate::error::{ContextError, Result};

/// A tokenizer loaded from a Hugging Face `tokenizer.json`.
pub struct HfTokenizer {
    inner: tokenizers::Tokenizer,
    name: String,
}

impl HfTokenizer {
    /// Loads `tokenizer.json` from `path`.
    pub fn from_file(path: &Path) -> Result<Self> {
        let inner =
            tokenizers::Tokenizer::from_file(path).map_err(|e| ContextError::Tokenizer {
                path: path.display().to_string(),
                message: format!("expected a Hugging Face tokenizer.json; {e}"),
            })?;
        Ok(HfTokenizer {
            inner,
            name: path.display().to_string(),
        })
    }
}

impl TextTokenizer for HfTokenizer {
    fn count(&self, text: &str) -> usize {
        // Without special tokens: the chat overhead is counted separately.
        self.inner
            .encode_fast(text, false)
            .map(|e| e.len())
            .unwrap_or_default()
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn is_special(&self, text: &str) -> bool {
        self.inner
            .get_added_vocabulary()
            .get_added_tokens_decoder()
            .values()
            .any(|token| token.special && token.content == text)
    }
}
