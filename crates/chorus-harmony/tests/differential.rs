//! Differential test against openai-harmony 0.0.8 over generated conversations and outputs:
//! identical tokens for completion, training and plain rendering, identical strict parse
//! results and rejections, the same streaming state after every token, and identical ordinary
//! encoding.
//!
//! The reference loads its vocabulary from `$TIKTOKEN_ENCODINGS_BASE/o200k_base.tiktoken` and
//! checks the file's SHA-256; this test writes that file from chorus's embedded table, so the
//! reference's hash check also proves the embedded table is the original o200k_base.
//! Everything runs in one `#[test]` because the variable must be set before any other thread
//! can read the environment.

mod support;

use chorus_harmony::{
    Conversation, Message, ParseOptions, Rank, RenderMode, RenderOptions, Role, encoding,
};
use openai_harmony::{HarmonyEncoding, HarmonyEncodingName, load_harmony_encoding};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Writes `o200k_base.tiktoken` into a fresh temporary directory.
fn write_vocabulary() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("chorus-harmony-vocab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(dir.join("o200k_base.tiktoken")).unwrap());
    encoding().write_tiktoken_file(&mut file).unwrap();
    std::io::Write::flush(&mut file).unwrap();
    dir
}

fn reference_encoding() -> HarmonyEncoding {
    let dir = write_vocabulary();
    // SAFETY: this binary has a single test, which sets the variable before starting any
    // other thread, and nothing else in the process reads or writes the environment meanwhile.
    unsafe { std::env::set_var("TIKTOKEN_ENCODINGS_BASE", &dir) };
    let loaded = load_harmony_encoding(HarmonyEncodingName::HarmonyGptOss)
        .expect("the reference accepts the vocabulary (its SHA-256 check passed)");
    std::fs::remove_dir_all(&dir).ok();
    loaded
}

fn to_reference(conversation: &Conversation) -> openai_harmony::chat::Conversation {
    serde_json::from_str(&serde_json::to_string(conversation).unwrap()).unwrap()
}

fn from_reference(messages: &[openai_harmony::chat::Message]) -> Vec<Message> {
    serde_json::from_str(&serde_json::to_string(messages).unwrap()).unwrap()
}

fn reference_role(role: Option<Role>) -> Option<openai_harmony::chat::Role> {
    role.map(|r| serde_json::from_value(serde_json::to_value(r).unwrap()).unwrap())
}

fn check_render(
    reference: &HarmonyEncoding,
    conversation: &Conversation,
    drop_analysis: bool,
) -> Result<(), TestCaseError> {
    let theirs = to_reference(conversation);
    prop_assert_eq!(
        serde_json::to_value(&theirs).unwrap(),
        serde_json::to_value(conversation).unwrap()
    );
    // The reference's config type is private: `Default` is `auto_drop_analysis: true`.
    let drop = Default::default();
    let config = drop_analysis.then_some(&drop);
    {
        let options = |mode| RenderOptions {
            mode,
            drop_analysis,
            ..Default::default()
        };
        let completion = reference
            .render_conversation_for_completion(
                &theirs,
                openai_harmony::chat::Role::Assistant,
                config,
            )
            .unwrap();
        let ours = chorus_harmony::render(conversation, &options(RenderMode::Completion)).unwrap();
        prop_assert_eq!(
            &ours,
            &completion,
            "completion, drop_analysis={}",
            drop_analysis
        );
        let training = reference
            .render_conversation_for_training(&theirs, config)
            .unwrap();
        prop_assert_eq!(
            chorus_harmony::render(conversation, &options(RenderMode::Training)).unwrap(),
            training
        );
        let plain = reference.render_conversation(&theirs, config).unwrap();
        prop_assert_eq!(
            chorus_harmony::render(conversation, &options(RenderMode::Plain)).unwrap(),
            plain
        );
        support::assert_no_special_in_content(conversation, &ours)?;
    }
    Ok(())
}

fn check_parse(
    reference: &HarmonyEncoding,
    tokens: &[Rank],
    role: Option<Role>,
) -> Result<(), TestCaseError> {
    let theirs = reference
        .parse_messages_from_completion_tokens(tokens.iter().copied(), reference_role(role));
    let ours = chorus_harmony::parse(tokens, role, ParseOptions::STRICT);
    match (&theirs, &ours) {
        (Ok(expected), Ok(got)) => prop_assert_eq!(&got.messages, &from_reference(expected)),
        (Err(_), Err(_)) => {}
        _ => prop_assert!(
            false,
            "reference {:?} but chorus {:?} for {:?}",
            theirs.as_ref().map(|_| "accepts"),
            ours,
            tokens
        ),
    }
    // Lenient parsing never fails, whatever the input.
    chorus_harmony::parse(tokens, role, ParseOptions::LENIENT).unwrap();
    Ok(())
}

/// Streams `tokens` through both parsers, comparing what they expose after every token.
fn check_stream(reference: &HarmonyEncoding, tokens: &[Rank]) -> Result<(), TestCaseError> {
    let mut theirs = openai_harmony::StreamableParser::new(reference.clone(), None).unwrap();
    let mut ours = chorus_harmony::StreamParser::new(None, ParseOptions::STRICT);
    for &token in tokens {
        let (a, b) = (theirs.process(token).is_ok(), ours.process(token).is_ok());
        prop_assert_eq!(a, b, "acceptance of token {}", token);
        if !a {
            return Ok(());
        }
        let role = theirs.current_role().map(|r| r.as_str().to_string());
        prop_assert_eq!(role, ours.current_role().map(|r| r.as_str().to_string()));
        prop_assert_eq!(
            theirs.current_channel(),
            ours.current_channel().map(String::from)
        );
        prop_assert_eq!(
            theirs.current_recipient(),
            ours.current_recipient().map(String::from)
        );
        prop_assert_eq!(
            theirs.current_content_type(),
            ours.current_content_type().map(String::from)
        );
        prop_assert_eq!(
            theirs.last_content_delta().unwrap(),
            ours.last_content_delta().map(String::from)
        );
        prop_assert_eq!(theirs.current_content().unwrap(), ours.current_content());
        prop_assert_eq!(from_reference(theirs.messages()), ours.messages().to_vec());
    }
    Ok(())
}

#[test]
fn chorus_matches_openai_harmony() {
    let reference = reference_encoding();
    // A runner counts the cases it has passed, so each property gets a fresh one.
    let runner = || {
        TestRunner::new(Config {
            cases: 1000,
            failure_persistence: None,
            ..Config::default()
        })
    };

    runner()
        .run(&support::text(), |text| {
            prop_assert_eq!(
                encoding().encode_ordinary(&text),
                reference.tokenizer().encode_ordinary(&text)
            );
            Ok(())
        })
        .unwrap();

    runner()
        .run(
            &(support::conversation(), proptest::bool::ANY),
            |(conversation, drop)| check_render(&reference, &conversation, drop),
        )
        .unwrap();

    runner()
        .run(
            &(support::completion_tokens(), proptest::bool::ANY),
            |(tokens, with_role)| {
                let role = with_role.then_some(Role::Assistant);
                let tokens = if with_role {
                    support::strip_assistant_start(&tokens)
                } else {
                    tokens
                };
                check_parse(&reference, &tokens, role)
            },
        )
        .unwrap();

    runner()
        .run(&support::completion_tokens(), |tokens| {
            check_stream(&reference, &tokens)
        })
        .unwrap();

    runner()
        .run(&support::token_soup(), |tokens| {
            check_parse(&reference, &tokens, None)?;
            check_parse(&reference, &tokens, Some(Role::Assistant))
        })
        .unwrap();
}
