//! `chorus count`: tokens of a conversation per message and by category, offline.

use chorus_context::command::{CountArgs as Request, count};
use chorus_formats::Format;
use clap::Args;

use crate::conversation::{parse_format, read_conversation};
use crate::error::CliError;
use crate::input::read_text;
use crate::output::warn;

/// Arguments of `chorus count`.
#[derive(Debug, Args)]
pub struct CountArgs {
    /// Model whose tokenizer and media prices apply (e.g. gpt-4o, gpt-oss-20b, claude-sonnet-4-5,
    /// gemini-2.5-pro, approximate); other names are counted approximately, with a warning.
    #[arg(long)]
    model: String,
    /// A Hugging Face tokenizer.json that counts the text exactly (open models).
    #[arg(long, value_name = "FILE")]
    tokenizer: Option<String>,
    /// Input format id (chorus, openai-chat, openai-responses, anthropic, gemini, ...).
    #[arg(long, default_value = "chorus", value_parser = parse_format)]
    from: Format,
    /// A JSON file overlaying the media cost table.
    #[arg(long, value_name = "FILE")]
    costs: Option<String>,
    /// Let image parts name local files (their headers are read).
    #[arg(long)]
    read_files: bool,
    /// The conversation; `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: String,
}

/// Runs `chorus count`.
pub fn run(args: CountArgs) -> Result<(), CliError> {
    let conversation = read_conversation(&args.file, args.from)?;
    let costs = args.costs.as_deref().map(read_text).transpose()?;
    let request = Request {
        model: args.model,
        costs,
        read_files: args.read_files,
        tokenizer: args.tokenizer,
    };
    let out = count(&conversation, &request).map_err(|e| CliError::context(&args.file, e))?;
    warn(&out.warnings);
    outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    Ok(())
}
