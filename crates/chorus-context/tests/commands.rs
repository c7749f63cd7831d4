//! The logic behind `chorus count` and `chorus trim`.

use chorus_context::command::{
    CommandError, CountArgs, CounterChoice, TrimArgs, TrimStrategy, count, trim,
};
use chorus_core::{ContentPart, Conversation};
use serde_json::json;

fn conversation() -> Conversation {
    serde_json::from_value(json!({"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high", "width": 1024, "height": 1024}}]},
        {"role": "assistant", "content": "A map."},
        {"role": "user", "content": "Of what?"}],
        "tools": [{"type": "function", "function": {"name": "zoom", "description": "Zooms in."}}]}))
    .unwrap()
}

fn count_args(model: &str) -> CountArgs {
    CountArgs {
        model: model.into(),
        costs: None,
        read_files: false,
        tokenizer: None,
    }
}

fn trim_args(strategy: TrimStrategy, max_tokens: usize) -> TrimArgs {
    TrimArgs {
        model: "gpt-4o".into(),
        max_tokens,
        strategy,
        counter: CounterChoice::Model,
        include_system: true,
        allow_partial: false,
        start_on: vec!["user".into()],
        end_on: vec![],
        summary: None,
        tokenizer: None,
    }
}

#[test]
fn count_gives_total_messages_and_breakdown() {
    let out = count(&conversation(), &count_args("gpt-4o")).unwrap();
    assert_eq!(
        out.total,
        out.messages.iter().sum::<usize>() + 3 + out.breakdown.tools
    );
    assert_eq!(out.breakdown.images, 765);
    assert!(out.breakdown.tools > 0);
    assert_eq!(out.breakdown.total(), out.total);
    let value = serde_json::to_value(&out).unwrap();
    for key in ["text", "images", "audio", "tools", "overhead"] {
        assert!(value["breakdown"][key].is_u64(), "{key}");
    }
}

#[test]
fn count_for_gpt_oss_is_the_harmony_rendering() {
    let conversation = conversation();
    let out = count(&conversation, &count_args("gpt-oss-120b")).unwrap();
    let mapped = chorus_harmony::chorus_map::to_harmony(
        &conversation,
        chorus_harmony::SystemContent::default(),
    );
    let rendered = chorus_harmony::render(
        &mapped.conversation,
        &chorus_harmony::RenderOptions::default(),
    )
    .unwrap();
    assert_eq!(out.total, rendered.len());
    assert_eq!(out.breakdown.total(), out.total);
    // gpt-oss takes no images: the image is not rendered, so it costs nothing.
    assert_eq!(out.breakdown.images, 0);
}

#[test]
fn errors_are_input_or_usage() {
    // An unknown model is no longer a usage error (issue 20): it is counted approximately, and
    // says so; a tokenizer file that cannot be read is.
    let unknown = count(&conversation(), &count_args("llama")).unwrap();
    assert!(!unknown.exact);
    assert!(
        unknown.warnings[0].contains("llama"),
        "{:?}",
        unknown.warnings
    );
    let missing_tokenizer = CountArgs {
        tokenizer: Some("/nonexistent/tokenizer.json".into()),
        ..count_args("llama")
    };
    assert!(matches!(
        count(&conversation(), &missing_tokenizer),
        Err(CommandError::Usage(m)) if m.contains("/nonexistent/tokenizer.json")
    ));
    let mut args = trim_args(TrimStrategy::Chorus, 100);
    args.counter = CounterChoice::Messages;
    assert!(matches!(
        trim(&conversation(), &args),
        Err(CommandError::Usage(_))
    ));
    let mut args = trim_args(TrimStrategy::Chorus, 100);
    args.summary = Some("not json".into());
    assert!(
        matches!(trim(&conversation(), &args), Err(CommandError::Input(m)) if m.starts_with("--summary"))
    );
    let bad_costs = CountArgs {
        costs: Some("{\"models\": 5}".into()),
        ..count_args("gpt-4o")
    };
    assert!(
        matches!(count(&conversation(), &bad_costs), Err(CommandError::Input(m)) if m.contains("/models"))
    );
}

#[test]
fn trim_keeps_tools_and_reports() {
    let out = trim(&conversation(), &trim_args(TrimStrategy::Chorus, 90)).unwrap();
    assert_eq!(out.kept.messages.len(), 4);
    assert_eq!(out.kept.tools, conversation().tools);
    assert_eq!(out.report["replaced"][0]["media_tokens"], json!(765));
    let lc = trim(&conversation(), &trim_args(TrimStrategy::LangChainLast, 60)).unwrap();
    assert_eq!(lc.kept.messages.len(), 2); // the system message and the last user message
    assert_eq!(lc.kept.messages[1].text(), "Of what?");
    assert_eq!(lc.report["messages_before"], json!(4));
}

#[test]
fn every_provider_family_counts_and_says_whether_exactly() {
    let conversation = conversation();
    let exact = count(&conversation, &count_args("gpt-4o")).unwrap();
    assert!(exact.exact && exact.warnings.is_empty());
    assert_eq!(exact.tokenizer, "o200k_base");
    for (model, rule) in [
        ("claude-sonnet-4-5", "Anthropic"),
        ("gemini-2.5-pro", "Gemini"),
        ("some-unknown-model", "unknown model"),
    ] {
        let out = count(&conversation, &count_args(model)).unwrap();
        assert!(!out.exact, "{model}");
        assert!(
            out.warnings[0].contains(rule),
            "{model}: {:?}",
            out.warnings
        );
        assert_eq!(serde_json::to_value(&out).unwrap()["exact"], json!(false));
        // Text is the o200k_base estimate; images follow the provider's own rule.
        assert_eq!(out.breakdown.text, exact.breakdown.text, "{model}");
        let table = chorus_context::media::CostTable::default();
        let image = &conversation.messages[1].parts()[1];
        let ContentPart::Image(image) = image else {
            panic!("not an image")
        };
        let priced = chorus_context::media::MediaPricer::new(&table, model)
            .unwrap()
            .image(image, "/p")
            .unwrap();
        assert_eq!(out.breakdown.images as u64, priced, "{model}");
    }
    // The provider rules differ: the same image is not priced alike everywhere.
    let claude = count(&conversation, &count_args("claude-sonnet-4-5")).unwrap();
    let gemini = count(&conversation, &count_args("gemini-2.5-pro")).unwrap();
    assert_ne!(claude.breakdown.images, gemini.breakdown.images);
}
