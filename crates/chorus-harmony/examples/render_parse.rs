//! Renders a chorus conversation with a tool into a gpt-oss prompt, then parses a completion
//! that reasons and calls the tool back into chorus messages.
//!
//! ```text
//! cargo run -p chorus-harmony --example render_parse
//! ```

use chorus_harmony::chorus_map::{from_harmony, to_harmony};
use chorus_harmony::{
    Conversation, ParseOptions, RenderMode, RenderOptions, Role, SystemContent, encoding, parse,
    render,
};

/// A chorus conversation offering one function tool.
const CONVERSATION: &str = r#"{
  "messages": [
    {"role": "system", "content": "You are the travel desk. Answer briefly."},
    {"role": "user", "content": "Weather in Paris tomorrow?"}
  ],
  "tools": [{"type": "function", "function": {"name": "weather",
    "description": "Forecast for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]
}"#;

/// What gpt-oss might answer after the prompt's `<|start|>assistant`.
const COMPLETION: &str = "<|channel|>analysis<|message|>Need the forecast.<|end|>\
<|start|>assistant<|channel|>commentary to=functions.weather <|constrain|>json\
<|message|>{\"city\":\"Paris\"}<|call|>";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chorus: chorus_core::Conversation = serde_json::from_str(CONVERSATION)?;
    let mapped = to_harmony(&chorus, SystemContent::default());
    for loss in &mapped.losses {
        eprintln!("left out {} at {}", loss.what, loss.pointer);
    }
    let options = RenderOptions {
        mode: RenderMode::Completion,
        ..RenderOptions::default()
    };
    let prompt = render(&mapped.conversation, &options)?;
    println!(
        "prompt ({} tokens):\n{}\n",
        prompt.len(),
        encoding().decode_utf8(&prompt)?
    );

    let completion = encoding().encode_with_special_tokens(COMPLETION);
    let parsed = parse(&completion, Some(Role::Assistant), ParseOptions::STRICT)?;
    let back = from_harmony(&Conversation {
        messages: parsed.messages,
    });
    println!(
        "as chorus messages:\n{}",
        serde_json::to_string_pretty(&back.messages)?
    );
    Ok(())
}
