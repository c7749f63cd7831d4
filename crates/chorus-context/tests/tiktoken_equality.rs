//! Counts equal tiktoken-rs on the same text, for both encodings, on varied text.
//!
//! `o200k_base` counts go through chorus-harmony's encoder (an ASCII pre-tokenizer fast path with
//! the regex for pieces that touch non-ASCII text), so the generated text mixes ASCII words,
//! contractions, digits, punctuation and whitespace runs with non-ASCII letters, marks, digits
//! and spaces right next to them. Text that may hold a piece longer than 256 bytes goes through
//! bpe-openai's linear encoder instead: the last property puts such runs between ordinary text.

use chorus_context::{BpeEncoding, TextTokenizer};
use std::sync::LazyLock;

use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

static O200K: LazyLock<CoreBPE> = LazyLock::new(|| tiktoken_rs::o200k_base().unwrap());
static CL100K: LazyLock<CoreBPE> = LazyLock::new(|| tiktoken_rs::cl100k_base().unwrap());

fn samples() -> Vec<String> {
    vec![
        "Hello, world! How's it going?".into(),
        "    indented code\n\tfn main() { println!(\"hi\"); }\n\n\n".into(),
        "お誕生日おめでとう — Привет, мир! 12345678 3.14159".into(),
        "<|endoftext|> <|im_start|> special-looking text".into(),
        "emoji 👩‍👩‍👧‍👦 and combining e\u{301} letters, URLs https://example.com/a?b=c".into(),
        "   trailing spaces   \r\n   ".into(),
        "don't I'M they'RE we'Ve you'll he'd it's O'Neil 'tis".into(),
        "x\u{a0}\u{a0}y \u{85}z\u{2003} \u{3000}終 caf\u{e9}'s ſK Kelvin ²³ ١٢٣ 𝔘𝔫𝔦".into(),
        "a  \n\n  b\t\t\u{e9}  \r\n\r\n é!!/\n/ +++é ...é".into(),
        "{\"k\": [1, 22, 333, 4444]}\n\tfn main() {}\n".repeat(40),
        String::new(),
    ]
}

#[test]
fn equal_to_tiktoken_on_samples() {
    for text in samples() {
        assert_eq!(
            BpeEncoding::O200kBase.count(&text),
            O200K.encode_ordinary(&text).len(),
            "{text:?}"
        );
        assert_eq!(
            BpeEncoding::Cl100kBase.count(&text),
            CL100K.encode_ordinary(&text).len(),
            "{text:?}"
        );
    }
}

/// Text where ASCII and non-ASCII pieces meet at every kind of boundary.
fn mixed_text() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        "[a-zA-Z]{1,8}",
        "'(s|t|re|ve|m|ll|d|S|T|RE|VE|M|LL|D|x)",
        "[0-9]{1,5}",
        "[ \t\r\n\x0b\x0c]{1,4}",
        "[.,!?/(){}=_+\\-]{1,3}",
        "[éàüßñçøåЖжЯяΩωσ]{1,3}",
        "[\u{301}\u{308}\u{a0}\u{85}\u{2003}\u{3000}²³ſK١٢٣]",
        "[日本語中文한국어おめでとう]{1,4}",
        "[👩🚀‍️🎉]{1,3}",
    ];
    proptest::collection::vec(atom, 0..24).prop_map(|atoms| atoms.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn o200k_equal_to_tiktoken_where_ascii_meets_other_text(text in mixed_text()) {
        prop_assert_eq!(BpeEncoding::O200kBase.count(&text), O200K.encode_ordinary(&text).len(), "{:?}", text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn equal_to_tiktoken_on_arbitrary_text(text in "\\PC{0,80}|[ a-zA-Z0-9'\\n\\t.,!?]{0,120}") {
        prop_assert_eq!(BpeEncoding::O200kBase.count(&text), O200K.encode_ordinary(&text).len());
        prop_assert_eq!(BpeEncoding::Cl100kBase.count(&text), CL100K.encode_ordinary(&text).len());
    }
}

/// Text with a run long enough to leave chorus-harmony's encoder for bpe-openai's linear one,
/// between ordinary text.
fn long_run_text() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        Just("a"),
        Just("天"),
        Just("!"),
        Just(" "),
        Just("\n"),
        Just("ab"),
        Just("é\u{301}"),
        Just("!/\n"),
        Just(" \u{3000}"),
        Just("1"),
    ];
    (mixed_text(), unit, 100usize..1500, mixed_text())
        .prop_map(|(before, unit, n, after)| format!("{before}{}{after}", unit.repeat(n)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn equal_to_tiktoken_around_long_runs(text in long_run_text()) {
        prop_assert_eq!(BpeEncoding::O200kBase.count(&text), O200K.encode_ordinary(&text).len(), "{:?}", text);
        prop_assert_eq!(BpeEncoding::Cl100kBase.count(&text), CL100K.encode_ordinary(&text).len(), "{:?}", text);
    }
}
