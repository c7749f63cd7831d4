//! The logic behind `chorus count` and `chorus trim`.

use chorus_context::command::{
    CommandError, CountArgs, CounterChoice, InputFormat, TrimArgs, TrimStrategy, count, trim,
};
use serde_json::json;

const CHAT: &str = r#"{"model": "gpt-4o", "messages": [
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": [{"type": "text", "text": "What is this?"},
    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "high", "width": 1024, "height": 1024}}]},
  {"role": "assistant", "content": "A map."},
  {"role": "user", "content": "Of what?"}]}"#;

fn count_args(model: &str) -> CountArgs {
    CountArgs {
        model: model.into(),
        from: InputFormat::OpenAiChat,
        costs: None,
        read_files: false,
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
        from: InputFormat::OpenAiChat,
    }
}

#[test]
fn count_prints_total_messages_and_breakdown() {
    let out = count(CHAT, &count_args("gpt-4o")).unwrap();
    let total = out["total"].as_u64().unwrap();
    let per_message: u64 = out["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(total, per_message + 3);
    assert_eq!(out["breakdown"]["images"], json!(765));
    let b = &out["breakdown"];
    let sum: u64 = ["text", "images", "audio", "tools", "overhead"]
        .iter()
        .map(|k| b[k].as_u64().unwrap())
        .sum();
    assert_eq!(sum, total);
}

#[test]
fn errors_are_input_or_usage() {
    let bad = r#"[{"role": "user", "content": 5}]"#;
    let err = count(bad, &count_args("gpt-4o")).unwrap_err();
    assert!(
        matches!(&err, CommandError::Input(m) if m.starts_with("/0/content")),
        "{err}"
    );
    assert!(matches!(
        count(CHAT, &count_args("llama")),
        Err(CommandError::Usage(_))
    ));
    let mut args = trim_args(TrimStrategy::Chorus, 100);
    args.counter = CounterChoice::Messages;
    assert!(matches!(trim(CHAT, &args), Err(CommandError::Usage(_))));
}

#[test]
fn trim_keeps_the_input_shape_and_reports() {
    let out = trim(CHAT, &trim_args(TrimStrategy::Chorus, 60)).unwrap();
    assert_eq!(out.kept["model"], json!("gpt-4o"));
    assert_eq!(out.kept["messages"].as_array().unwrap().len(), 4);
    assert_eq!(out.report["replaced"][0]["media_tokens"], json!(765));
    let lc = trim(CHAT, &trim_args(TrimStrategy::LangChainLast, 60)).unwrap();
    let kept = lc.kept["messages"].as_array().unwrap();
    assert_eq!(kept.len(), 2); // the system message and the last user message
    assert_eq!(kept[1]["content"], json!("Of what?"));
    assert_eq!(lc.report["messages_before"], json!(4));
}
