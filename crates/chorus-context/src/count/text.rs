//! Text tokenizers: a small trait over the byte-pair encoders and other vocabularies.

/// Counts the tokens of plain text, as ordinary text (special-token strings are not special).
pub trait TextTokenizer: Send + Sync {
    /// Number of tokens `text` encodes to.
    fn count(&self, text: &str) -> usize;
    /// A short name for reports, e.g. `o200k_base`.
    fn name(&self) -> &str;
}

/// The OpenAI byte-pair encodings chorus counts offline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BpeEncoding {
    /// gpt-4o, gpt-4.1, gpt-5, o-series.
    O200kBase,
    /// gpt-4, gpt-3.5-turbo.
    Cl100kBase,
}

impl BpeEncoding {
    /// The encoding's name as tiktoken spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            BpeEncoding::O200kBase => "o200k_base",
            BpeEncoding::Cl100kBase => "cl100k_base",
        }
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            BpeEncoding::O200kBase => bpe_openai::o200k_base(),
            BpeEncoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }
}

impl TextTokenizer for BpeEncoding {
    fn count(&self, text: &str) -> usize {
        self.tokenizer().count(text)
    }

    fn name(&self) -> &str {
        self.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        // "tiktoken is great!" is 6 cl100k_base tokens (OpenAI cookbook).
        assert_eq!(BpeEncoding::Cl100kBase.count("tiktoken is great!"), 6);
        assert_eq!(BpeEncoding::O200kBase.count(""), 0);
        // Special-token text is ordinary text.
        assert!(BpeEncoding::O200kBase.count("<|endoftext|>") > 1);
    }
}
