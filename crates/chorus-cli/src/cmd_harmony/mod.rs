//! `chorus harmony render|parse`: Harmony (gpt-oss) tokens from conversations and back.

mod commands;

use chorus_harmony::{RenderMode, Role};
use clap::{Args, Subcommand, ValueEnum};

use crate::error::CliError;
use crate::input::read_text;
use commands::{
    ConversationFormat, Output, ParseRequest, RenderRequest, TokenFormat, parse_command,
    render_command,
};

/// Arguments of `chorus harmony`.
#[derive(Debug, Args)]
pub struct HarmonyArgs {
    #[command(subcommand)]
    command: HarmonyCommand,
}

#[derive(Debug, Subcommand)]
enum HarmonyCommand {
    /// Render a conversation into Harmony tokens or text.
    Render(RenderArgs),
    /// Parse Harmony completion tokens or text into messages.
    Parse(ParseArgs),
}

#[derive(Debug, Args)]
struct RenderArgs {
    /// The input's shape.
    #[arg(long, value_enum, default_value = "harmony-json")]
    from: ConversationFormat,
    /// completion (ends with `<|start|>assistant`), training or plain.
    #[arg(long, value_enum, default_value = "completion")]
    mode: Mode,
    /// Keep analysis messages that the reference's rule drops.
    #[arg(long)]
    keep_analysis: bool,
    /// Refuse a channel the system message does not list (exit 1); the reference renders it.
    #[arg(long)]
    strict: bool,
    /// A JSON array of token ids, or the decoded text.
    #[arg(long, value_enum, default_value = "tokens")]
    output: TokenFormat,
    /// The conversation file, or `-` for standard input.
    file: String,
}

#[derive(Debug, Args)]
struct ParseArgs {
    /// A JSON array of token ids, or text with the special tokens written literally.
    #[arg(long, value_enum, default_value = "tokens")]
    input: TokenFormat,
    /// The role whose header the prompt already opened (e.g. assistant).
    #[arg(long, value_enum)]
    role: Option<RoleArg>,
    /// Recover from malformed output instead of rejecting it.
    #[arg(long)]
    lenient: bool,
    /// Print one JSON object per token (role, channel, recipient, content_type, delta).
    #[arg(long)]
    stream: bool,
    /// The message shape printed.
    #[arg(long, value_enum, default_value = "harmony-json")]
    to: To,
    /// The completion file, or `-` for standard input.
    file: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    Completion,
    Training,
    Plain,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum To {
    HarmonyJson,
    Chorus,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoleArg {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

/// Runs the command: 0 ok, 1 input rejected, 2 usage or I/O error.
pub fn run(args: HarmonyArgs) -> Result<(), CliError> {
    let (file, result) = match args.command {
        HarmonyCommand::Render(args) => {
            let request = RenderRequest {
                from: args.from,
                mode: match args.mode {
                    Mode::Completion => RenderMode::Completion,
                    Mode::Training => RenderMode::Training,
                    Mode::Plain => RenderMode::Plain,
                },
                keep_analysis: args.keep_analysis,
                strict_channels: args.strict,
                output: args.output,
            };
            let input = read_text(&args.file)?;
            (args.file, render_command(&input, &request))
        }
        HarmonyCommand::Parse(args) => {
            let request = ParseRequest {
                input: args.input,
                role: args.role.map(|role| match role {
                    RoleArg::System => Role::System,
                    RoleArg::Developer => Role::Developer,
                    RoleArg::User => Role::User,
                    RoleArg::Assistant => Role::Assistant,
                    RoleArg::Tool => Role::Tool,
                }),
                lenient: args.lenient,
                stream: args.stream,
                to_chorus: matches!(args.to, To::Chorus),
            };
            let input = read_text(&args.file)?;
            (args.file, parse_command(&input, &request))
        }
    };
    let Output { stdout, warnings } =
        result.map_err(|error| CliError::rejected(format!("{file}: {error}")))?;
    for warning in warnings {
        errln!("chorus harmony: {file}: {warning}");
    }
    out!("{stdout}");
    Ok(())
}
