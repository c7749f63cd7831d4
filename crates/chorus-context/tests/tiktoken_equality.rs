//! Counts equal tiktoken-rs on the same text, for both encodings, on varied text.

use chorus_context::count::{BpeEncoding, TextTokenizer};
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn equal_to_tiktoken_on_arbitrary_text(text in "\\PC{0,80}|[ a-zA-Z0-9'\\n\\t.,!?]{0,120}") {
        prop_assert_eq!(BpeEncoding::O200kBase.count(&text), O200K.encode_ordinary(&text).len());
        prop_assert_eq!(BpeEncoding::Cl100kBase.count(&text), CL100K.encode_ordinary(&text).len());
    }
}
