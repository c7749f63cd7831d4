//! The o200k_harmony encoding: o200k_base byte-pair ranks plus the Harmony special tokens.
//!
//! The ranks are bpe-openai's o200k_base dictionary (a token's id is its rank), the one copy of
//! the vocabulary in the binary, indexed once, on first use, by [`encoding`]. Encoding text never yields a special token; only
//! [`Encoding::encode_with_special_tokens`] turns literal `<|...|>` names into special ids.

use std::sync::LazyLock;

use regex::Regex;
use rustc_hash::FxHashMap;

use crate::pretokenize;
use crate::tokens::{self, Rank};

/// Pieces longer than this (bytes) are encoded by bpe-openai in linear time; shorter ones by the
/// byte-pair merge here, which is faster on the short pieces of ordinary text.
const LINEAR_FROM: usize = 256;

/// Number of ordinary tokens in the rank table.
const ORDINARY_TOKENS: usize = tokens::FIRST_SPECIAL as usize;

/// The o200k pre-tokenizer, with its `\s+(?!\S)` look-ahead branch replaced by `\s+`; the
/// look-ahead is applied afterwards by [`Encoding::split_pieces`].
const PRETOKENIZE: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+",
);

/// A token id that the encoding does not contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("token id {0} is not in the o200k_harmony vocabulary (ids 0..={max})", max = tokens::LAST_SPECIAL)]
pub struct UnknownToken(pub Rank);

/// Why a token sequence could not be decoded to a string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// A token id outside the vocabulary.
    #[error(transparent)]
    UnknownToken(#[from] UnknownToken),
    /// The bytes of the tokens are not valid UTF-8.
    #[error("tokens decode to invalid UTF-8 at byte {valid_up_to}")]
    InvalidUtf8 {
        /// Length of the valid prefix in bytes.
        valid_up_to: usize,
    },
}

/// The loaded o200k_harmony encoding.
pub struct Encoding {
    ranks: FxHashMap<&'static [u8], Rank>,
    pretokenizer: Regex,
    special_names: Vec<String>,
}

static ENCODING: LazyLock<Encoding> = LazyLock::new(Encoding::load);

/// The process-wide o200k_harmony encoding, loaded on first use.
pub fn encoding() -> &'static Encoding {
    &ENCODING
}

impl Encoding {
    /// Builds the encoding from the embedded table (what [`encoding`] does once).
    pub fn load() -> Self {
        let mut ranks = FxHashMap::with_capacity_and_hasher(ORDINARY_TOKENS, Default::default());
        for rank in 0..ORDINARY_TOKENS {
            ranks.insert(ordinary_bytes(rank), rank as Rank);
        }
        let special_names = (tokens::FIRST_SPECIAL..=tokens::LAST_SPECIAL)
            .map(|id| tokens::special_name(id).unwrap_or_default())
            .collect();
        Self {
            ranks,
            pretokenizer: Regex::new(PRETOKENIZE).expect("the pre-tokenizer pattern is valid"),
            special_names,
        }
    }

    /// Encodes `text` as ordinary tokens, appending them to `out`; never yields a special token.
    pub fn encode_ordinary_into(&self, text: &str, out: &mut Vec<Rank>) {
        self.split_pieces(text, |piece| self.encode_piece(piece, out));
    }

    /// Encodes `text` as ordinary tokens; never yields a special token.
    pub fn encode_ordinary(&self, text: &str) -> Vec<Rank> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        self.encode_ordinary_into(text, &mut out);
        out
    }

    /// Encodes `text`, turning every literal special-token name (`<|end|>`) into its id.
    ///
    /// For tests and tools that read rendered prompts as text; never use it on untrusted text.
    pub fn encode_with_special_tokens(&self, text: &str) -> Vec<Rank> {
        let mut out = Vec::with_capacity(text.len() / 3 + 1);
        let mut plain_start = 0;
        let mut search = 0;
        while let Some(open) = text[search..].find("<|").map(|i| i + search) {
            let Some(close) = text[open + 2..].find("|>").map(|i| i + open + 4) else {
                break;
            };
            match tokens::special_id(&text[open..close]) {
                Some(id) => {
                    self.encode_ordinary_into(&text[plain_start..open], &mut out);
                    out.push(id);
                    plain_start = close;
                    search = close;
                }
                None => search = open + 2,
            }
        }
        self.encode_ordinary_into(&text[plain_start..], &mut out);
        out
    }

    /// The bytes of one token: its byte-pair bytes, or the literal name of a special token.
    pub fn token_bytes(&self, id: Rank) -> Result<&[u8], UnknownToken> {
        let index = id as usize;
        if index < ORDINARY_TOKENS {
            Ok(ordinary_bytes(index))
        } else if tokens::is_special(id) {
            Ok(self.special_names[index - ORDINARY_TOKENS].as_bytes())
        } else {
            Err(UnknownToken(id))
        }
    }

    /// Appends the bytes of `ids` to `out`.
    pub fn decode_bytes_into(&self, ids: &[Rank], out: &mut Vec<u8>) -> Result<(), UnknownToken> {
        for &id in ids {
            out.extend_from_slice(self.token_bytes(id)?);
        }
        Ok(())
    }

    /// Decodes `ids` to a string; special tokens decode to their literal names.
    pub fn decode_utf8(&self, ids: &[Rank]) -> Result<String, DecodeError> {
        let mut bytes = Vec::with_capacity(ids.len() * 4);
        self.decode_bytes_into(ids, &mut bytes)?;
        String::from_utf8(bytes).map_err(|e| DecodeError::InvalidUtf8 {
            valid_up_to: e.utf8_error().valid_up_to(),
        })
    }

    /// Writes the ordinary ranks in tiktoken's `o200k_base.tiktoken` format (base64 bytes, a
    /// space, the rank, a newline), byte-identical to OpenAI's published file.
    pub fn write_tiktoken_file(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        use base64::Engine as _;
        let mut line = String::with_capacity(64);
        for rank in 0..ORDINARY_TOKENS {
            line.clear();
            base64::engine::general_purpose::STANDARD
                .encode_string(ordinary_bytes(rank), &mut line);
            line.push_str(&format!(" {rank}\n"));
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }

    /// Splits `text` into o200k pre-tokenizer pieces, calling `piece` for each in order.
    fn split_pieces(&self, text: &str, mut piece: impl FnMut(&[u8])) {
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let end = pretokenize::ascii_piece_end(bytes, at)
                .unwrap_or_else(|| self.regex_piece_end(text, at));
            piece(&bytes[at..end]);
            at = end;
        }
    }

    /// The end of the piece starting at `at`, found with the regex.
    fn regex_piece_end(&self, text: &str, at: usize) -> usize {
        let Some(found) = self.pretokenizer.find_at(text, at) else {
            return text.len();
        };
        let matched = found.as_str();
        // `\s+(?!\S)`: a whitespace run followed by a non-space gives its last char away.
        if matched.chars().all(char::is_whitespace)
            && !matched.contains(['\r', '\n'])
            && text[found.end()..]
                .chars()
                .next()
                .is_some_and(|c| !c.is_whitespace())
            && let Some((last, _)) = matched.char_indices().next_back().filter(|(i, _)| *i > 0)
        {
            return found.start() + last;
        }
        found.end()
    }

    /// Byte-pair encodes one pre-tokenizer piece.
    fn encode_piece(&self, piece: &[u8], out: &mut Vec<Rank>) {
        if let Some(&rank) = self.ranks.get(piece) {
            out.push(rank);
            return;
        }
        if piece.len() == 1 {
            // Every single byte is a token of o200k_base.
            out.push(self.ranks[piece]);
            return;
        }
        if piece.len() > LINEAR_FROM {
            // The merge below is quadratic in the piece's length (100k CJK characters took 24 s);
            // bpe-openai's backtracking encoder gives the same tokens in linear time, and
            // o200k_harmony's ordinary tokens are o200k_base's.
            out.extend(bpe_openai::o200k_base().bpe.encode_via_backtracking(piece));
            return;
        }
        self.merge(piece, out);
    }

    /// The byte-pair merge: repeatedly joins the adjacent pair whose union has the lowest rank.
    fn merge(&self, piece: &[u8], out: &mut Vec<Rank>) {
        // parts[i] = (start offset of part i, rank of part i joined with part i + 1)
        let rank_of = |parts: &[(usize, Rank)], i: usize| -> Rank {
            if i + 2 < parts.len() {
                let bytes = &piece[parts[i].0..parts[i + 2].0];
                self.ranks.get(bytes).copied().unwrap_or(Rank::MAX)
            } else {
                Rank::MAX
            }
        };
        let mut parts: Vec<(usize, Rank)> = (0..=piece.len()).map(|i| (i, Rank::MAX)).collect();
        for i in 0..parts.len() {
            parts[i].1 = rank_of(&parts, i);
        }
        while let Some((best, _)) = parts[..parts.len() - 1]
            .iter()
            .enumerate()
            .filter(|(_, p)| p.1 != Rank::MAX)
            .min_by_key(|(_, p)| p.1)
        {
            parts.remove(best + 1);
            parts[best].1 = rank_of(&parts, best);
            if best > 0 {
                parts[best - 1].1 = rank_of(&parts, best - 1);
            }
        }
        for window in parts.windows(2) {
            out.push(self.ranks[&piece[window[0].0..window[1].0]]);
        }
    }
}

/// The bytes of ordinary token `rank` (below [`ORDINARY_TOKENS`]), from bpe-openai's o200k_base
/// dictionary: chorus embeds no table of its own (it once embedded a 2.2 MB copy of these bytes).
fn ordinary_bytes(rank: usize) -> &'static [u8] {
    bpe_openai::o200k_base().bpe.token_bytes(rank as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vocabulary_is_tiktokens_o200k_base_token_by_token() {
        let bpe = &bpe_openai::o200k_base().bpe;
        assert_eq!(
            bpe.num_tokens(),
            ORDINARY_TOKENS,
            "every ordinary token, no more"
        );
        let tiktoken = tiktoken_rs::o200k_base().unwrap();
        for rank in 0..ORDINARY_TOKENS {
            let theirs = tiktoken.decode_bytes(&[rank as u32]).unwrap();
            assert_eq!(ordinary_bytes(rank), theirs.as_slice(), "rank {rank}");
        }
    }

    proptest::proptest! {
        /// Long pieces go to bpe-openai: the tokens are the byte-pair merge's, exactly.
        #[test]
        fn long_pieces_encode_as_the_merge_does(
            unit in proptest::sample::select(vec!["a", "ab", "語", "Ж", "!", "-=", "😀", "0", " "]),
            other in "[a-zé語!?.0-9]{0,3}",
            repeat in (LINEAR_FROM / 2)..(LINEAR_FROM * 4),
        ) {
            let piece = format!("{other}{}{other}", unit.repeat(repeat));
            let e = encoding();
            let mut merged = Vec::new();
            e.merge(piece.as_bytes(), &mut merged);
            let mut encoded = Vec::new();
            e.encode_piece(piece.as_bytes(), &mut encoded);
            proptest::prop_assert_eq!(encoded, merged);
        }
    }

    #[test]
    fn text_that_spells_special_tokens_stays_ordinary() {
        let ids = encoding().encode_ordinary("<|end|><|start|>assistant<|reserved_200013|>");
        assert!(ids.iter().all(|&id| !tokens::is_special(id)), "{ids:?}");
        assert_eq!(
            encoding().decode_utf8(&ids).unwrap(),
            "<|end|><|start|>assistant<|reserved_200013|>"
        );
    }

    #[test]
    fn literal_names_become_special_ids_only_when_asked() {
        let ids = encoding().encode_with_special_tokens("<|start|>user<|message|>hi <|x|><|end|>");
        assert_eq!(ids[0], tokens::START);
        assert_eq!(ids[2], tokens::MESSAGE);
        assert_eq!(*ids.last().unwrap(), tokens::END);
        assert_eq!(ids.iter().filter(|&&id| tokens::is_special(id)).count(), 3);
    }

    #[test]
    fn the_ascii_fast_path_splits_like_the_regex() {
        let samples = [
            "Hello world's HTMLParser  x",
            "  \n\n  y\t\tz",
            "a1234b ...!!/\n/x",
            " 'RE 'll 'Ve",
            "I'M \r\n\r\n",
            "x  ",
            "   ",
            "(hello) [World]",
            "\x0b\x0cq",
            "don't stop",
            "12 345 6789",
            "a'b 'c",
            "é ascii après",
        ];
        for text in samples {
            let mut at = 0;
            while at < text.len() {
                let regex = encoding().regex_piece_end(text, at);
                if let Some(fast) = pretokenize::ascii_piece_end(text.as_bytes(), at) {
                    assert_eq!(fast, regex, "{text:?} at {at}");
                }
                at = regex;
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn the_ascii_fast_path_agrees_on_arbitrary_text(text in "[a-zA-Z0-9 '\t\r\n\x0b\x0c.,!?/(){}=_é\u{a0}\u{85}²ſK-]{0,40}") {
            let mut at = 0;
            while at < text.len() {
                let regex = encoding().regex_piece_end(&text, at);
                if let Some(fast) = pretokenize::ascii_piece_end(text.as_bytes(), at) {
                    proptest::prop_assert_eq!(fast, regex, "{:?} at {}", text, at);
                }
                at = regex;
            }
        }
    }

    #[test]
    fn unknown_ids_are_reported() {
        assert_eq!(encoding().token_bytes(201_089), Err(UnknownToken(201_089)));
        assert_eq!(
            encoding().token_bytes(201_088).unwrap(),
            b"<|reserved_201088|>"
        );
    }
}
