//! Validates a chorus document and, when it is a conversation, prints who said what, as
//! `chorus validate` does for one file.
//!
//! ```text
//! cargo run -p chorus-core --example validate -- [FILE]
//! ```
//!
//! Without a file it checks a built-in conversation whose tool result answers a call nobody
//! made, and prints that problem at its JSON pointer.

use std::process::ExitCode;

use chorus_core::{Conversation, Kind, Validator};

/// A conversation with one mistake: the tool result names `call_2`, the call was `call_1`.
const SAMPLE: &str = r#"{
  "messages": [
    {"role": "user", "name": "alice", "content": "Weather in Paris?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "call_1", "type": "function",
       "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": "18 °C, light rain"}
  ]
}"#;

fn main() -> ExitCode {
    let input = match std::env::args().nth(1) {
        None => SAMPLE.to_owned(),
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("error: {path}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let report = Validator::standard().validate_bytes(input.as_bytes(), None);
    let kind = report.kind.map_or("unknown", Kind::name);
    println!("kind: {kind}");
    for problem in &report.problems {
        println!("{problem}");
    }
    if report.kind == Some(Kind::Conversation)
        && let Ok(conversation) = serde_json::from_str::<Conversation>(&input)
    {
        for message in &conversation.messages {
            let speaker = message.name.as_deref().unwrap_or(message.role.as_str());
            let calls: Vec<&str> = message
                .calls()
                .iter()
                .map(|c| c.function.name.as_str())
                .collect();
            println!("{speaker}: {:?} calls {calls:?}", message.text());
        }
    }
    if report.is_valid() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
