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

/// The OpenAI byte-pair encodings chorus counts offline, in time linear in the text's length:
/// `o200k_base` with chorus-harmony's encoder or, for text with long unbroken runs, bpe-openai's;
/// `cl100k_base` with bpe-openai.
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

/// Longest pre-tokenizer piece, in bytes, that chorus-harmony's encoder is given: its byte-pair
/// merge costs the square of a piece's length, so text that may hold a longer piece goes to
/// bpe-openai's linear encoder instead. Both give tiktoken's tokens.
const LONG_PIECE: usize = 256;

/// `o200k_base` tokens of `text`, in time linear in its length: chorus-harmony's encoder (its
/// ordinary vocabulary is `o200k_base`; special tokens are never produced from text) when no
/// pre-tokenizer piece can be longer than [`LONG_PIECE`], bpe-openai's otherwise.
fn count_o200k(text: &str) -> usize {
    if may_hold_a_long_piece(text) {
        return bpe_openai::o200k_base().count(text);
    }
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

/// Whether a pre-tokenizer piece of `text` may be longer than [`LONG_PIECE`]. Ordinary text is
/// cleared without a full scan: when every aligned block of half that length holds an ASCII space
/// and an ASCII byte that is not whitespace, no run without a space and no whitespace run reaches
/// a whole block, so none is as long as two ([`longest_piece_bound`] below says why that bounds
/// the pieces). Text that fails this is scanned.
fn may_hold_a_long_piece(text: &str) -> bool {
    const BLOCK: usize = LONG_PIECE / 2;
    let bytes = text.as_bytes();
    if bytes.len() <= LONG_PIECE {
        return false;
    }
    let cleared = bytes.chunks(BLOCK).all(|block| {
        block.contains(&b' ') && block.iter().any(|&b| b.is_ascii() && !is_ascii_space(b))
    });
    !cleared && longest_piece_bound(text) > LONG_PIECE
}

/// ASCII whitespace as the pre-tokenizer's `\s` sees it: tab, line feed, vertical tab, form
/// feed, carriage return, space.
fn is_ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t'..=b'\r')
}

/// An upper bound, in bytes, of the longest piece the o200k (or cl100k) pre-tokenizer cuts from
/// `text`. A piece is either all whitespace, or holds an ASCII space at most as its first
/// character; so no piece is longer than the longest whitespace run, nor than one byte more than
/// the longest run without an ASCII space.
fn longest_piece_bound(text: &str) -> usize {
    let bytes = text.as_bytes();
    let (mut longest, mut no_space_from, mut space_from) = (0, 0, 0);
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (len, whitespace) = match b {
            b' ' => {
                longest = longest.max(i - no_space_from + 1);
                no_space_from = i + 1;
                (1, true)
            }
            b'\t'..=b'\r' => (1, true),
            0..0x80 => (1, false),
            // Lead bytes of the non-ASCII whitespace (U+0085, U+00A0, U+1680, U+2000-U+205F,
            // U+3000) are decoded; any other character is not whitespace.
            0xC2 | 0xE1 | 0xE2 | 0xE3 => {
                let c = text[i..].chars().next().unwrap_or_default();
                (c.len_utf8(), c.is_whitespace())
            }
            _ => (1, false),
        };
        if !whitespace {
            longest = longest.max(i - space_from);
            space_from = i + len;
        }
        i += len;
    }
    longest
        .max(bytes.len() - no_space_from + 1)
        .max(bytes.len() - space_from)
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

    #[test]
    fn long_runs_are_found_and_ordinary_text_is_cleared() {
        let prose = "The agent calls a tool and waits for its result. ".repeat(100);
        assert!(!may_hold_a_long_piece(&prose));
        for run in [
            "a".repeat(300),
            "天".repeat(90),
            " ".repeat(300),
            "\u{3000}".repeat(90),
        ] {
            assert!(
                may_hold_a_long_piece(&format!("{prose}{run}{prose}")),
                "{run:?}"
            );
        }
        // Blocks without a space but with short runs (CJK sentences, code) are scanned, and pass.
        let cjk = "数据消息会被合并。 ".repeat(200);
        assert!(!may_hold_a_long_piece(&cjk));
    }

    #[test]
    fn piece_bound_covers_whitespace_runs_and_unbroken_runs() {
        assert!(longest_piece_bound("") <= 1);
        assert!(longest_piece_bound("ab cd ef") < 8);
        assert!(longest_piece_bound("ab cd") >= " cd".len());
        // A whitespace run of mixed spaces is one piece.
        let mixed = " \u{3000}".repeat(100);
        assert!(longest_piece_bound(&mixed) >= mixed.len());
        // `[\r\n/]*` may follow a punctuation run: no ASCII space, one run.
        let slashes = "!/\n/\n".repeat(100);
        assert!(longest_piece_bound(&slashes) >= slashes.len());
    }
}
