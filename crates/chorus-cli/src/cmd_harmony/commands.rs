//! The work of `chorus harmony render` and `chorus harmony parse`: input text in, output text
//! out, so the front end (`mod.rs`) only reads files and prints.

use chorus_harmony::chorus_map::{from_harmony, to_harmony};
use chorus_harmony::{
    Conversation, Diagnostic, Message, ParseOptions, Rank, RenderMode, RenderOptions, Role,
    StreamParser, SystemContent, encoding, parse, reference_json, render,
};
use clap::ValueEnum;
use serde_json::json;

/// The shape of a conversation given to `render` (`--from`). The variants have plain comments:
/// clap would print a variant's doc comment in `--help`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ConversationFormat {
    // A chorus conversation (`{"messages": [...], "tools": [...]}`) or message array.
    Chorus,
    // openai-harmony's `Conversation` JSON (`{"messages": [...]}`) or message array.
    HarmonyJson,
}

/// How tokens are written or read (`--output`, `--input`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TokenFormat {
    // One JSON array of token ids.
    Tokens,
    // Text with the special tokens written literally.
    Text,
}

/// What `render` does.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderRequest {
    /// The input's shape.
    pub from: ConversationFormat,
    /// Completion, training or plain.
    pub mode: RenderMode,
    /// Keep analysis messages that the reference's rule would drop.
    pub keep_analysis: bool,
    /// Refuse a channel the system message does not list (the reference renders it).
    pub strict_channels: bool,
    /// Token ids or text.
    pub output: TokenFormat,
}

/// What `parse` does.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseRequest {
    /// Token ids or text.
    pub input: TokenFormat,
    /// The role whose header the prompt already opened.
    pub role: Option<Role>,
    /// Recover from malformed output.
    pub lenient: bool,
    /// One JSON object per token instead of the messages.
    pub stream: bool,
    /// Write chorus messages instead of openai-harmony's message JSON.
    pub to_chorus: bool,
}

/// The output of a command: what goes to standard output and the warnings for standard error.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Output {
    /// Standard output.
    pub stdout: String,
    /// Warnings (lenient repairs), one per line.
    pub warnings: Vec<String>,
}

/// Renders the conversation in `input`. Errors describe rejected input (exit code 1).
pub fn render_command(input: &str, request: &RenderRequest) -> Result<Output, String> {
    let (conversation, warnings) = match request.from {
        ConversationFormat::HarmonyJson => (
            read_reference_json::<Conversation>(input, "an openai-harmony conversation")?,
            Vec::new(),
        ),
        ConversationFormat::Chorus => {
            let chorus = read_json::<chorus_core::Conversation>(input, "a chorus conversation")?;
            let mapped = to_harmony(&chorus, SystemContent::default());
            let warnings = mapped
                .losses
                .iter()
                .map(|l| format!("{}: left out {}", l.pointer, l.what))
                .collect();
            (mapped.conversation, warnings)
        }
    };
    let options = RenderOptions {
        mode: request.mode,
        drop_analysis: !request.keep_analysis,
        strict_channels: request.strict_channels,
        ..Default::default()
    };
    let tokens = render(&conversation, &options).map_err(|e| e.to_string())?;
    // The text is the prompt exactly, with no newline after it (a prompt file must not gain a
    // token); the JSON array ends its line.
    let stdout = match request.output {
        TokenFormat::Tokens => serde_json::to_string(&tokens).map_err(|e| e.to_string())? + "\n",
        TokenFormat::Text => encoding().decode_utf8(&tokens).map_err(|e| e.to_string())?,
    };
    Ok(Output { stdout, warnings })
}

/// Parses the completion in `input`. Errors describe rejected input (exit code 1).
pub fn parse_command(input: &str, request: &ParseRequest) -> Result<Output, String> {
    let tokens: Vec<Rank> = match request.input {
        TokenFormat::Tokens => read_json(input, "a JSON array of token ids")?,
        TokenFormat::Text => {
            encoding().encode_with_special_tokens(input.strip_suffix('\n').unwrap_or(input))
        }
    };
    let options = ParseOptions {
        lenient: request.lenient,
    };
    if request.stream {
        return stream_lines(&tokens, request.role, options);
    }
    let output = parse(&tokens, request.role, options).map_err(|e| e.to_string())?;
    let stdout = messages_json(&output.messages, request.to_chorus)?;
    Ok(Output {
        stdout: stdout + "\n",
        warnings: output.diagnostics.iter().map(describe).collect(),
    })
}

fn stream_lines(
    tokens: &[Rank],
    role: Option<Role>,
    options: ParseOptions,
) -> Result<Output, String> {
    let mut parser = StreamParser::new(role, options);
    let mut stdout = String::new();
    for &token in tokens {
        parser.process(token).map_err(|e| e.to_string())?;
        let line = json!({
            "role": parser.current_role(),
            "channel": parser.current_channel(),
            "recipient": parser.current_recipient(),
            "content_type": parser.current_content_type(),
            "delta": parser.last_content_delta(),
        });
        stdout.push_str(&line.to_string());
        stdout.push('\n');
    }
    let output = parser.finish().map_err(|e| e.to_string())?;
    Ok(Output {
        stdout,
        warnings: output.diagnostics.iter().map(describe).collect(),
    })
}

fn messages_json(messages: &[Message], to_chorus: bool) -> Result<String, String> {
    let result = if to_chorus {
        let conversation = Conversation {
            messages: messages.to_vec(),
        };
        serde_json::to_string_pretty(&from_harmony(&conversation).messages)
    } else {
        serde_json::to_string_pretty(messages)
    };
    result.map_err(|e| e.to_string())
}

fn describe(diagnostic: &Diagnostic) -> String {
    format!(
        "token {}: repaired: {:?}",
        diagnostic.position, diagnostic.kind
    )
}

/// Reads JSON as `T` (or, for conversations, a bare message array), naming the failing path.
fn read_json<T: serde::de::DeserializeOwned>(input: &str, what: &str) -> Result<T, String> {
    let value: serde_json::Value = serde_json::from_str(input)
        .map_err(|e| format!("expected {what}, found invalid JSON: {e}"))?;
    from_value(value, what)
}

/// Reads openai-harmony conversation JSON with the numbers the reference's Python package reads.
fn read_reference_json<T: serde::de::DeserializeOwned>(
    input: &str,
    what: &str,
) -> Result<T, String> {
    let value: serde_json::Value = reference_json::from_str(input)
        .map_err(|e| format!("expected {what}, found invalid JSON: {e}"))?;
    from_value(value, what)
}

/// A message array as a conversation; then the typed value.
fn from_value<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    what: &str,
) -> Result<T, String> {
    let value = match value {
        serde_json::Value::Array(items) if what.contains("conversation") => {
            json!({ "messages": items })
        }
        other => other,
    };
    serde_json::from_value(value).map_err(|e| format!("expected {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_then_parse_round_trips_through_text() {
        let input = r#"{"messages":[{"role":"user","content":"Hi <|end|>"}]}"#;
        let request = RenderRequest {
            from: ConversationFormat::HarmonyJson,
            mode: RenderMode::Completion,
            keep_analysis: false,
            strict_channels: false,
            output: TokenFormat::Text,
        };
        let text = render_command(input, &request).unwrap().stdout;
        assert_eq!(
            text, "<|start|>user<|message|>Hi <|end|><|end|><|start|>assistant",
            "the text is the prompt, with no newline after it"
        );
        let tokens = render_command(
            input,
            &RenderRequest {
                output: TokenFormat::Tokens,
                ..request
            },
        )
        .unwrap()
        .stdout;
        let parse_request = ParseRequest {
            input: TokenFormat::Tokens,
            role: None,
            lenient: false,
            stream: false,
            to_chorus: false,
        };
        let completion: Vec<Rank> = serde_json::from_str(&tokens).unwrap();
        let without_prompt = serde_json::to_string(&completion[..completion.len() - 2]).unwrap();
        let messages = parse_command(&without_prompt, &parse_request)
            .unwrap()
            .stdout;
        let parsed: Vec<Message> = serde_json::from_str(&messages).unwrap();
        assert_eq!(parsed, vec![Message::new(Role::User, "Hi <|end|>")]);
    }

    #[test]
    fn stream_prints_one_object_per_token() {
        let request = ParseRequest {
            input: TokenFormat::Text,
            role: Some(Role::Assistant),
            lenient: false,
            stream: true,
            to_chorus: false,
        };
        let out = parse_command("<|channel|>final<|message|>Hi<|end|>\n", &request)
            .unwrap()
            .stdout;
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(
            lines[3],
            json!({"role": "assistant", "channel": "final", "recipient": null, "content_type": null, "delta": "Hi"})
        );
    }

    #[test]
    fn chorus_input_is_mapped_and_losses_are_warned() {
        let input = r#"{"messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}]}
        ]}"#;
        let request = RenderRequest {
            from: ConversationFormat::Chorus,
            mode: RenderMode::Plain,
            keep_analysis: false,
            strict_channels: false,
            output: TokenFormat::Text,
        };
        let output = render_command(input, &request).unwrap();
        assert!(output.stdout.contains("<|start|>developer<|message|># Instructions\n\nBe brief.<|end|><|start|>user<|message|>Hi<|end|>"), "{}", output.stdout);
        assert_eq!(
            output.warnings,
            vec!["/messages/1/content/1: left out the image_url part".to_string()]
        );
    }

    #[test]
    fn rejections_name_the_position() {
        let request = ParseRequest {
            input: TokenFormat::Text,
            role: None,
            lenient: false,
            stream: false,
            to_chorus: false,
        };
        let error = parse_command("hello", &request).unwrap_err();
        assert!(error.starts_with("token 0: expected <|start|>"), "{error}");
        let error = render_command(
            "{\"messages\": 3}",
            &RenderRequest {
                from: ConversationFormat::HarmonyJson,
                mode: RenderMode::Plain,
                keep_analysis: true,
                strict_channels: false,
                output: TokenFormat::Text,
            },
        )
        .unwrap_err();
        assert!(
            error.contains("expected an openai-harmony conversation"),
            "{error}"
        );
    }
}
