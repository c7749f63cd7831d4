//! Lenient parsing of real gpt-oss output: one test per quirk, each with the messages it must
//! produce; plus properties: it never fails and never drops text.

use chorus_harmony::{
    DiagnosticKind, Message, ParseOptions, ParseOutput, Repair, Role, encoding, parse, tokens,
};
use proptest::prelude::*;

fn lenient(text: &str, role: Option<Role>) -> ParseOutput {
    let tokens = encoding().encode_with_special_tokens(text);
    parse(&tokens, role, ParseOptions::LENIENT).unwrap()
}

fn strict_rejects(text: &str, role: Option<Role>) -> bool {
    parse(
        &encoding().encode_with_special_tokens(text),
        role,
        ParseOptions::STRICT,
    )
    .is_err()
}

fn kinds(output: &ParseOutput) -> Vec<DiagnosticKind> {
    output.diagnostics.iter().map(|d| d.kind.clone()).collect()
}

fn call(args: &str) -> Message {
    Message::new(Role::Assistant, args)
        .with_channel("commentary")
        .with_recipient("functions.get_weather")
        .with_content_type("<|constrain|>json")
}

#[test]
fn missing_start_assistant() {
    let text = "<|channel|>final<|message|>Hi there<|end|>";
    assert!(strict_rejects(text, None));
    let output = lenient(text, None);
    assert_eq!(
        output.messages,
        vec![Message::new(Role::Assistant, "Hi there").with_channel("final")]
    );
    assert_eq!(kinds(&output), vec![DiagnosticKind::MissingStart]);
}

#[test]
fn channel_and_recipient_in_either_order() {
    let a = lenient(
        "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{}<|call|>",
        None,
    );
    let b = lenient(
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>",
        None,
    );
    assert_eq!(a.messages, vec![call("{}")]);
    assert_eq!(b.messages, vec![call("{}")]);
    assert!(a.diagnostics.is_empty() && b.diagnostics.is_empty());
}

/// A bare `json` stays `json` (before issue 20 it became `<|constrain|>json`, which invents a
/// token the model did not write; the reference keeps it too).
#[test]
fn constrain_with_or_without_space_or_absent() {
    for header in [
        "to=functions.get_weather<|constrain|>json",
        "to=functions.get_weather <|constrain|>json",
        "to=functions.get_weather <|constrain|> json",
    ] {
        let output = lenient(
            &format!("<|channel|>commentary {header}<|message|>{{\"city\":\"Oslo\"}}<|call|>"),
            Some(Role::Assistant),
        );
        assert_eq!(
            output.messages,
            vec![call("{\"city\":\"Oslo\"}")],
            "{header}"
        );
    }
    let text = "<|channel|>commentary to=functions.get_weather json<|message|>{}<|call|>";
    let absent = lenient(text, Some(Role::Assistant));
    assert_eq!(absent.messages, vec![call("{}").with_content_type("json")]);
    assert!(absent.diagnostics.is_empty());
    let strict = parse(
        &encoding().encode_with_special_tokens(text),
        Some(Role::Assistant),
        ParseOptions::STRICT,
    )
    .unwrap();
    assert_eq!(strict.messages, absent.messages);
}

#[test]
fn whitespace_around_header_words() {
    let text = "<|start|> assistant <|channel|> commentary to= functions.get_weather  <|constrain|>json <|message|>{}<|call|>";
    let output = lenient(text, None);
    assert_eq!(output.messages, vec![call("{}")]);
    assert_eq!(
        kinds(&output),
        vec![
            DiagnosticKind::Header(Repair::SpacedWord("<|channel|>commentary".into())),
            DiagnosticKind::Header(Repair::SpacedWord("to=functions.get_weather".into())),
        ]
    );
    assert!(strict_rejects(text, None));
}

#[test]
fn repeated_message_token() {
    let text = "<|channel|>final<|message|><|message|>Hi<|end|>";
    let output = lenient(text, Some(Role::Assistant));
    assert_eq!(
        output.messages,
        vec![Message::new(Role::Assistant, "Hi").with_channel("final")]
    );
    assert_eq!(kinds(&output), vec![DiagnosticKind::RepeatedMessage]);
    // Later in the content it is text the model wrote, and stays.
    let later = lenient(
        "<|channel|>final<|message|>a<|message|>b<|end|>",
        Some(Role::Assistant),
    );
    assert_eq!(later.messages[0].text(), "a<|message|>b");
    assert!(later.diagnostics.is_empty());
}

#[test]
fn role_word_that_is_really_a_recipient() {
    let text = "<|start|>functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{}<|call|>";
    let output = lenient(text, None);
    assert_eq!(output.messages, vec![call("{}")]);
    assert_eq!(
        kinds(&output),
        vec![DiagnosticKind::Header(Repair::RoleWasRecipient(
            "functions.get_weather".into()
        ))]
    );
    // A tool's output (ending with <|end|>) keeps the name as its author.
    let result = lenient(
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{}<|end|>",
        None,
    );
    assert_eq!(result.messages[0].author.role, Role::Tool);
    assert!(result.diagnostics.is_empty());
}

#[test]
fn garbage_channel_word_without_a_known_prefix_is_kept() {
    let output = lenient("<|channel|>json<|message|>x<|end|>", Some(Role::Assistant));
    assert_eq!(output.messages[0].channel.as_deref(), Some("json"));
    assert_eq!(
        kinds(&output),
        vec![DiagnosticKind::Header(Repair::UnknownChannel(
            "json".into()
        ))]
    );
}

#[test]
fn content_type_without_recipient() {
    let text = "<|start|>assistant<|channel|>final <|constrain|>json<|message|>{\"a\":1}<|end|>";
    let output = lenient(text, None);
    let expected = Message::new(Role::Assistant, "{\"a\":1}")
        .with_channel("final")
        .with_content_type("<|constrain|>json");
    assert_eq!(output.messages, vec![expected]);
    // The reference reads the content type as a recipient here.
    let strict = parse(
        &encoding().encode_with_special_tokens(text),
        None,
        ParseOptions::STRICT,
    )
    .unwrap();
    assert_eq!(
        strict.messages[0].recipient.as_deref(),
        Some("<|constrain|>json")
    );
}

#[test]
fn garbage_doubled_and_empty_channels() {
    let garbage = lenient(
        "<|channel|>commentary?<|message|>Checking.<|end|>",
        Some(Role::Assistant),
    );
    assert_eq!(
        garbage.messages,
        vec![Message::new(Role::Assistant, "Checking.").with_channel("commentary")]
    );
    assert_eq!(
        kinds(&garbage),
        vec![DiagnosticKind::Header(Repair::GarbageChannel(
            "commentary?".into()
        ))]
    );

    let doubled = lenient(
        "<|channel|><|channel|>analysis<|message|>Think.<|end|>",
        Some(Role::Assistant),
    );
    assert_eq!(
        doubled.messages,
        vec![Message::new(Role::Assistant, "Think.").with_channel("analysis")]
    );
    assert_eq!(
        kinds(&doubled),
        vec![DiagnosticKind::Header(Repair::DoubledChannel)]
    );
    assert!(strict_rejects(
        "<|channel|><|channel|>analysis<|message|>Think.<|end|>",
        Some(Role::Assistant)
    ));

    let empty = lenient("<|channel|><|message|>Plain.<|end|>", Some(Role::Assistant));
    assert_eq!(
        empty.messages,
        vec![Message::new(Role::Assistant, "Plain.")]
    );
    assert_eq!(
        kinds(&empty),
        vec![DiagnosticKind::Header(Repair::EmptyChannel)]
    );
}

#[test]
fn recipient_on_the_analysis_channel() {
    let output = lenient(
        "<|channel|>analysis to=python code<|message|>print(1)<|call|>",
        Some(Role::Assistant),
    );
    let expected = Message::new(Role::Assistant, "print(1)")
        .with_channel("analysis")
        .with_recipient("python")
        .with_content_type("code");
    assert_eq!(output.messages, vec![expected]);
    assert_eq!(
        kinds(&output),
        vec![DiagnosticKind::Header(Repair::RecipientOnAnalysis)]
    );
}

#[test]
fn text_after_call_or_end() {
    for stop in ["<|call|>", "<|end|>"] {
        let text = format!(
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{{}}{stop} and more"
        );
        assert!(strict_rejects(&text, Some(Role::Assistant)));
        let output = lenient(&text, Some(Role::Assistant));
        assert_eq!(
            output.messages,
            vec![call("{}"), Message::new(Role::Assistant, " and more")],
            "{stop}"
        );
        assert_eq!(kinds(&output), vec![DiagnosticKind::StrayText]);
    }
}

#[test]
fn stop_token_before_message() {
    let text = "<|channel|>final Hello  there<|end|><|start|>user<|message|>ok<|end|>";
    // The reference reads on through the stop token and makes "Hello" a recipient.
    let ids = encoding().encode_with_special_tokens(text);
    let strict = parse(&ids, Some(Role::Assistant), ParseOptions::STRICT).unwrap();
    assert_eq!(strict.messages[0].recipient.as_deref(), Some("Hello"));
    let output = lenient(text, Some(Role::Assistant));
    assert_eq!(
        output.messages,
        vec![
            Message::new(Role::Assistant, "Hello  there").with_channel("final"),
            Message::new(Role::User, "ok"),
        ]
    );
    assert_eq!(kinds(&output), vec![DiagnosticKind::StopInHeader]);
}

#[test]
fn header_cut_off_by_end_of_stream() {
    let text = "<|start|>assistant<|channel|>commentary to=functions.get_weather";
    assert!(strict_rejects(text, None));
    let output = lenient(text, None);
    let expected = Message::new(Role::Assistant, "")
        .with_channel("commentary")
        .with_recipient("functions.get_weather");
    assert_eq!(output.messages, vec![expected]);
    assert_eq!(kinds(&output), vec![DiagnosticKind::HeaderCutOff]);
}

#[test]
fn unknown_token_ids_become_replacement_characters() {
    let mut ids = encoding().encode_with_special_tokens("<|start|>assistant<|message|>a");
    ids.push(999_999);
    ids.extend(encoding().encode_ordinary("b"));
    let output = parse(&ids, None, ParseOptions::LENIENT).unwrap();
    assert_eq!(
        output.messages,
        vec![Message::new(Role::Assistant, "a\u{FFFD}b")]
    );
    assert_eq!(kinds(&output), vec![DiagnosticKind::UnknownToken(999_999)]);
}

proptest! {
    #[test]
    fn lenient_parsing_never_fails(ids in proptest::collection::vec(prop_oneof![0u32..200_100, 200_000u32..200_014, any::<u32>()], 0..64), with_role: bool) {
        let role = with_role.then_some(Role::Assistant);
        prop_assert!(parse(&ids, role, ParseOptions::LENIENT).is_ok());
    }

    #[test]
    fn lenient_parsing_keeps_text_between_stop_tokens(chunks in proptest::collection::vec(("[0-9 .,;!?#*()\\n]{1,12}", proptest::sample::select(vec![tokens::END, tokens::CALL, tokens::RETURN])), 1..6)) {
        let mut ids = Vec::new();
        for (text, stop) in &chunks {
            ids.extend(encoding().encode_ordinary(text));
            ids.push(*stop);
        }
        let output = parse(&ids, None, ParseOptions::LENIENT).unwrap();
        let kept: String = output.messages.iter().map(Message::text).collect();
        let written: String = chunks.iter().map(|(text, _)| text.as_str()).collect();
        prop_assert_eq!(kept, written);
    }
}
