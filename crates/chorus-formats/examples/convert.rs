//! Converts a conversation from one format to another and lists what the target could not
//! carry, as `chorus convert` does.
//!
//! ```text
//! cargo run -p chorus-formats --example convert -- [FROM TO [FILE]]
//! ```
//!
//! Without arguments it converts a small multi-agent Chat Completions request to Anthropic
//! Messages. Format ids are those of `chorus formats` (`openai-chat`, `anthropic`, `qwen3`, ...).

use std::process::ExitCode;

use chorus_formats::{EncodeOptions, Format, convert};

/// A Chat Completions request with two speakers and a tool call.
const SAMPLE: &str = r#"{
  "messages": [
    {"role": "system", "content": "You are the travel desk."},
    {"role": "user", "name": "alice", "content": "Weather in Paris tomorrow?"},
    {"role": "assistant", "name": "planner", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function",
       "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "18 °C, light rain"},
    {"role": "assistant", "name": "planner", "content": "18 °C with light rain: take an umbrella."}
  ]
}"#;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (from, to, file) = match args.as_slice() {
        [] => ("openai-chat", "anthropic", None),
        [from, to] => (from.as_str(), to.as_str(), None),
        [from, to, file] => (from.as_str(), to.as_str(), Some(file.as_str())),
        _ => return usage("expected no arguments, or FROM TO [FILE]"),
    };
    let (from, to) = match (from.parse::<Format>(), to.parse::<Format>()) {
        (Ok(from), Ok(to)) => (from, to),
        (Err(e), _) | (_, Err(e)) => return usage(&e.to_string()),
    };
    let input = match file {
        None => SAMPLE.to_owned(),
        Some(path) => match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => return usage(&format!("{path}: {e}")),
        },
    };
    match convert(from, to, &input, &EncodeOptions::default(), false) {
        Ok(encoded) => {
            print!("{}", encoded.value);
            for loss in &encoded.losses {
                eprintln!("lost: {loss}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}\nusage: convert [FROM TO [FILE]]");
    ExitCode::from(2)
}
