//! `chorus count`: tokens of a conversation per message and by category, offline.

use std::process::ExitCode;

use chorus_context::command::{CommandError, CountArgs as Request, count};
use chorus_formats::Format;
use clap::Args;

use crate::input::read_input;

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
pub fn run(args: CountArgs) -> ExitCode {
    let conversation = match read_conversation(&args.file, args.from) {
        Ok(conversation) => conversation,
        Err(code) => return code,
    };
    let costs = match args.costs.as_deref().map(read_text).transpose() {
        Ok(costs) => costs,
        Err(e) => return fail(2, &e),
    };
    let request = Request {
        model: args.model,
        costs,
        read_files: args.read_files,
        tokenizer: args.tokenizer,
    };
    match count(&conversation, &request) {
        Ok(out) => {
            warn(&out.warnings);
            print_stdout(&serde_json::to_string_pretty(&out).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(CommandError::Input(e)) => fail(1, &format!("{}: {e}", args.file)),
        Err(CommandError::Usage(e)) => fail(2, &e),
    }
}

/// Reads a format id.
pub(crate) fn parse_format(id: &str) -> Result<Format, String> {
    id.parse::<Format>().map_err(|e| e.to_string())
}

/// Reads and decodes the conversation in `path`, or returns the exit code after printing why.
pub(crate) fn read_conversation(
    path: &str,
    format: Format,
) -> Result<chorus_core::Conversation, ExitCode> {
    let text = read_text(path).map_err(|e| fail(2, &e))?;
    format
        .decode(&text)
        .map_err(|e| fail(1, &format!("{path}: {e}")))
}

/// Reads a file (or `-`) as UTF-8 text.
pub(crate) fn read_text(path: &str) -> Result<String, String> {
    let bytes = read_input(path)?;
    String::from_utf8(bytes).map_err(|e| format!("{path}: expected UTF-8 text; {e}"))
}

/// Writes `text` and a newline to standard output (a closed pipe ends the command quietly).
pub(crate) fn print_stdout(text: &str) {
    outln!("{text}");
}

/// Prints each of `warnings` on standard error.
pub(crate) fn warn(warnings: &[String]) {
    for warning in warnings {
        errln!("warning: {warning}");
    }
}

/// Prints `message` as an error and returns exit code `code`.
pub(crate) fn fail(code: u8, message: &str) -> ExitCode {
    errln!("error: {message}");
    ExitCode::from(code)
}
