//! Counts a chorus conversation's tokens for a model, by category, then trims it to a budget
//! with the chorus strategy and says what was dropped or replaced, as `chorus count` and
//! `chorus trim` do.
//!
//! ```text
//! cargo run -p chorus-context --example count_trim -- [MODEL BUDGET [FILE]]
//! ```
//!
//! Without arguments it uses gpt-4o, a budget of 120 and a built-in conversation with an image
//! and a tool call whose result must not lose its call.

use std::process::ExitCode;

use chorus_context::TokenCounter;
use chorus_context::trim::trim_chorus;
use chorus_core::Conversation;

/// An old turn with a large image, a tool call and its result, then the question.
const SAMPLE: &str = r#"{
  "messages": [
    {"role": "system", "content": "You are the travel desk."},
    {"role": "user", "content": [{"type": "text", "text": "Where is this?"},
      {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png",
        "detail": "high", "width": 2048, "height": 1536}}]},
    {"role": "assistant", "content": "The Eiffel Tower, Paris."},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, light rain"},
    {"role": "user", "content": "Should I take an umbrella?"}
  ]
}"#;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (model, budget, file) = match args.as_slice() {
        [] => ("gpt-4o", "120", None),
        [model, budget] => (model.as_str(), budget.as_str(), None),
        [model, budget, file] => (model.as_str(), budget.as_str(), Some(file.as_str())),
        _ => return usage("expected no arguments, or MODEL BUDGET [FILE]"),
    };
    let Ok(budget) = budget.parse::<usize>() else {
        return usage(&format!(
            "BUDGET: expected a number of tokens, found {budget:?}"
        ));
    };
    let text = match file {
        None => SAMPLE.to_owned(),
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => return usage(&format!("{path}: {e}")),
        },
    };
    match run(model, budget, &text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(model: &str, budget: usize, text: &str) -> Result<(), Box<dyn std::error::Error>> {
    let conversation: Conversation = serde_json::from_str(text)?;
    let counter = TokenCounter::for_model(model)?;
    if let Some(warning) = counter.warning() {
        eprintln!("warning: {warning}");
    }
    let count = counter.count_conversation(&conversation)?;
    println!("{model}: {} tokens {:?}", count.total, count.breakdown);
    let tools = conversation.tools.as_deref().unwrap_or_default();
    let trimmed = trim_chorus(&conversation.messages, tools, &counter, budget, None)?;
    let report = &trimmed.report;
    println!(
        "trimmed to {budget}: {} -> {} tokens",
        report.tokens_before, report.tokens_after
    );
    for dropped in &report.dropped {
        println!(
            "  dropped message {} ({:?}, {} tokens)",
            dropped.index, dropped.role, dropped.tokens
        );
    }
    for replaced in &report.replaced {
        println!("  replaced media: {}", serde_json::to_string(replaced)?);
    }
    Ok(())
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}\nusage: count_trim [MODEL BUDGET [FILE]]");
    ExitCode::from(2)
}
