//! `chorus count`: tokens of a conversation per message and by category, offline.

use std::process::ExitCode;

use chorus_context::command::{CommandError, CountArgs as Request, InputFormat, count};
use clap::Args;

use crate::input::read_input;

/// Arguments of `chorus count`.
#[derive(Debug, Args)]
pub struct CountArgs {
    /// Model whose tokenizer and media prices apply (e.g. gpt-4o, gpt-4, approximate).
    #[arg(long)]
    model: String,
    /// Input format: chorus or openai-chat.
    #[arg(long, default_value = "chorus", value_parser = InputFormat::parse)]
    from: InputFormat,
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
    let text = match read_text(&args.file) {
        Ok(text) => text,
        Err(e) => return fail(2, &e),
    };
    let costs = match args.costs.as_deref().map(read_text).transpose() {
        Ok(costs) => costs,
        Err(e) => return fail(2, &e),
    };
    let request = Request {
        model: args.model,
        from: args.from,
        costs,
        read_files: args.read_files,
    };
    match count(&text, &request) {
        Ok(out) => {
            print_stdout(&serde_json::to_string_pretty(&out).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(CommandError::Input(e)) => fail(1, &format!("{}: {e}", args.file)),
        Err(CommandError::Usage(e)) => fail(2, &e),
    }
}

/// Reads a file (or `-`) as UTF-8 text.
pub(crate) fn read_text(path: &str) -> Result<String, String> {
    let bytes = read_input(path)?;
    String::from_utf8(bytes).map_err(|e| format!("{path}: expected UTF-8 text; {e}"))
}

/// Writes `text` and a newline to standard output; a closed pipe is not an error.
pub(crate) fn print_stdout(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
}

/// Prints `message` as an error and returns exit code `code`.
pub(crate) fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(code)
}
