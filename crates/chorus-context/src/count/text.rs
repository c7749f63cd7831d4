//! Text tokenizers: a small trait over the byte-pair encoders and other vocabularies.

use std::cell::RefCell;

use chorus_harmony::Rank;

/// Counts the tokens of plain text, as ordinary text (special-token strings are not special).
pub trait TextTokenizer: Send + Sync {
    /// Number of tokens `text` encodes to.
    fn count(&self, text: &str) -> usize;
    /// A short name for reports, e.g. `o200k_base`.
    fn name(&self) -> &str;
    /// Whether `text` is one of the vocabulary's special tokens (e.g. `<|im_start|>`), which
    /// the tokenizer matches in text; none by default.
    fn is_special(&self, _text: &str) -> bool {
        false
    }
}

/// The OpenAI byte-pair encodings chorus counts offline: `o200k_base` with chorus-harmony's
/// encoder, `cl100k_base` with bpe-openai.
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
}

impl TextTokenizer for BpeEncoding {
    fn count(&self, text: &str) -> usize {
        match self {
            BpeEncoding::O200kBase => count_o200k(text),
            BpeEncoding::Cl100kBase => bpe_openai::cl100k_base().count(text),
        }
    }

    fn name(&self) -> &str {
        self.as_str()
    }
}

thread_local! {
    /// Scratch space for the token ids of [`count_o200k`], reused so counting does not allocate.
    static O200K_IDS: RefCell<Vec<Rank>> = const { RefCell::new(Vec::new()) };
}

/// `o200k_base` tokens of `text`, through chorus-harmony's encoder (its ordinary vocabulary is
/// `o200k_base`; the special tokens are never produced from text).
fn count_o200k(text: &str) -> usize {
    /// Capacity kept between calls (1 MiB of ids); a larger buffer is freed after use.
    const KEPT: usize = 1 << 18;
    O200K_IDS.with_borrow_mut(|ids| {
        ids.clear();
        chorus_harmony::encoding().encode_ordinary_into(text, ids);
        let count = ids.len();
        if ids.capacity() > KEPT {
            *ids = Vec::new();
        }
        count
    })
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
