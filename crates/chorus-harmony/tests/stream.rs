//! The streaming parser: same messages as the full parse, deltas that add up to the content,
//! header fields visible while content streams, UTF-8 split across tokens delivered whole.

mod support;

use chorus_harmony::{
    Message, ParseOptions, Rank, RenderMode, RenderOptions, Role, StreamParser, encoding, parse,
};
use proptest::prelude::*;

/// Streams `ids`, collecting each message's deltas; returns the messages and the deltas.
fn stream(
    ids: &[Rank],
    role: Option<Role>,
    options: ParseOptions,
) -> Option<(Vec<Message>, Vec<String>)> {
    let mut parser = StreamParser::new(role, options);
    let mut deltas = vec![String::new()];
    for &id in ids {
        let before = parser.messages().len();
        parser.process(id).ok()?;
        if parser.messages().len() > before {
            deltas.push(String::new());
        }
        if let Some(delta) = parser.last_content_delta() {
            deltas.last_mut().unwrap().push_str(delta);
        }
    }
    Some((parser.finish().ok()?.messages, deltas))
}

#[test]
fn header_fields_are_visible_while_content_streams() {
    let ids = encoding().encode_with_special_tokens("<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": 1}");
    let mut parser = StreamParser::new(None, ParseOptions::STRICT);
    for &id in &ids {
        parser.process(id).unwrap();
    }
    assert_eq!(parser.current_role(), Some(Role::Assistant));
    assert_eq!(parser.current_channel(), Some("commentary"));
    assert_eq!(parser.current_recipient(), Some("functions.f"));
    assert_eq!(parser.current_content_type(), Some("<|constrain|>json"));
    assert_eq!(parser.current_content(), "{\"a\": 1}");
    assert_eq!(parser.last_content_delta(), Some("}"));
}

#[test]
fn a_character_split_across_tokens_comes_out_whole() {
    let heart = encoding().encode_ordinary("💖");
    assert!(heart.len() >= 2, "💖 takes several tokens");
    let mut parser = StreamParser::new(Some(Role::Assistant), ParseOptions::STRICT);
    for &id in &encoding().encode_with_special_tokens("<|channel|>final<|message|>") {
        parser.process(id).unwrap();
    }
    for &id in &heart[..heart.len() - 1] {
        parser.process(id).unwrap();
        assert_eq!(parser.last_content_delta(), None);
        assert_eq!(parser.current_content(), "");
    }
    parser.process(*heart.last().unwrap()).unwrap();
    assert_eq!(parser.last_content_delta(), Some("💖"));
    let messages = parser.finish().unwrap().messages;
    assert_eq!(
        messages,
        vec![Message::new(Role::Assistant, "💖").with_channel("final")]
    );
}

#[test]
fn invalid_utf8_becomes_replacement_characters_as_the_reference_does() {
    // Token 9552 is the bytes " \xF0\x9F": a space and an unfinished 4-byte character.
    let mut ids = encoding().encode_with_special_tokens("<|start|>assistant<|message|>");
    ids.extend([9552, 9552]);
    ids.extend(encoding().encode_with_special_tokens("worked<|end|>"));
    let messages = parse(&ids, None, ParseOptions::STRICT).unwrap().messages;
    assert_eq!(
        messages,
        vec![Message::new(Role::Assistant, " \u{FFFD} \u{FFFD}worked")]
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn streamed_messages_equal_parsed_messages(conversation in support::conversation()) {
        let options = RenderOptions { mode: RenderMode::Plain, drop_analysis: false, ..Default::default() };
        let ids = chorus_harmony::render(&conversation, &options).unwrap();
        let parsed = parse(&ids, None, ParseOptions::STRICT).unwrap().messages;
        let (streamed, deltas) = stream(&ids, None, ParseOptions::STRICT).unwrap();
        prop_assert_eq!(&streamed, &parsed);
        for (message, delta) in streamed.iter().zip(&deltas) {
            prop_assert_eq!(&message.text(), delta);
        }
    }

    #[test]
    fn streaming_equals_parsing_on_damaged_output(ids in support::completion_tokens(), lenient: bool) {
        let options = if lenient { ParseOptions::LENIENT } else { ParseOptions::STRICT };
        let parsed = parse(&ids, None, options).ok().map(|o| o.messages);
        let streamed = stream(&ids, None, options).map(|(messages, _)| messages);
        prop_assert_eq!(streamed, parsed);
    }
}
