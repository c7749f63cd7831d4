//! `chorus trim`: the kept conversation on stdout, the report on stderr (JSON).

use std::process::ExitCode;

use chorus_context::command::{
    CommandError, CounterChoice, TrimArgs as Request, TrimStrategy, trim,
};
use chorus_formats::{EncodeOptions, Format};
use clap::{Args, ValueEnum};

use crate::cmd_count::{fail, parse_format, print_stdout, read_conversation, read_text, warn};

/// `--strategy` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum StrategyArg {
    Chorus,
    LangchainLast,
    LangchainFirst,
}

/// `--token-counter` values.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum CounterArg {
    Model,
    Approximate,
    Messages,
}

/// Arguments of `chorus trim`.
#[derive(Debug, Args)]
pub struct TrimArgs {
    /// Model whose tokenizer and media prices apply; other names are counted approximately.
    #[arg(long)]
    model: String,
    /// A Hugging Face tokenizer.json that counts the text exactly (open models).
    #[arg(long, value_name = "FILE")]
    tokenizer: Option<String>,
    /// The token budget.
    #[arg(long)]
    max_tokens: usize,
    /// chorus (never orphans a tool result), or LangChain's trim_messages.
    #[arg(long, value_enum, default_value_t = StrategyArg::Chorus)]
    strategy: StrategyArg,
    /// How tokens are counted.
    #[arg(long, value_enum, default_value_t = CounterArg::Model)]
    token_counter: CounterArg,
    /// LangChain: keep a leading system message.
    #[arg(long)]
    include_system: bool,
    /// LangChain: allow cutting a message.
    #[arg(long)]
    allow_partial: bool,
    /// LangChain: start on this role (repeatable).
    #[arg(long, value_name = "ROLE")]
    start_on: Vec<String>,
    /// LangChain: end on this role (repeatable).
    #[arg(long, value_name = "ROLE")]
    end_on: Vec<String>,
    /// chorus: a message (JSON file) summarizing what gets dropped.
    #[arg(long, value_name = "FILE")]
    summary: Option<String>,
    /// Input format id; the kept conversation is written in the same format.
    #[arg(long, default_value = "chorus", value_parser = parse_format)]
    from: Format,
    /// The conversation; `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: String,
}

/// Runs `chorus trim`.
pub fn run(args: TrimArgs) -> ExitCode {
    let conversation = match read_conversation(&args.file, args.from) {
        Ok(conversation) => conversation,
        Err(code) => return code,
    };
    let summary = match args.summary.as_deref().map(read_text).transpose() {
        Ok(summary) => summary,
        Err(e) => return fail(2, &e),
    };
    let request = Request {
        model: args.model,
        max_tokens: args.max_tokens,
        strategy: match args.strategy {
            StrategyArg::Chorus => TrimStrategy::Chorus,
            StrategyArg::LangchainLast => TrimStrategy::LangChainLast,
            StrategyArg::LangchainFirst => TrimStrategy::LangChainFirst,
        },
        counter: match args.token_counter {
            CounterArg::Model => CounterChoice::Model,
            CounterArg::Approximate => CounterChoice::Approximate,
            CounterArg::Messages => CounterChoice::Messages,
        },
        include_system: args.include_system,
        allow_partial: args.allow_partial,
        start_on: args.start_on,
        end_on: args.end_on,
        summary,
        tokenizer: args.tokenizer,
    };
    match trim(&conversation, &request) {
        Ok(out) => {
            warn(&out.warnings);
            let encoded = match args.from.encode(&out.kept, &EncodeOptions::default()) {
                Ok(encoded) => encoded,
                Err(e) => return fail(1, &format!("{}: {e}", args.file)),
            };
            let mut report = out.report;
            if !encoded.losses.is_empty() {
                report["format_losses"] = serde_json::to_value(&encoded.losses).unwrap_or_default();
            }
            print_stdout(&encoded.value);
            errln!("{}", serde_json::to_string(&report).unwrap_or_default());
            ExitCode::SUCCESS
        }
        Err(CommandError::Input(e)) => fail(1, &format!("{}: {e}", args.file)),
        Err(CommandError::Usage(e)) => fail(2, &e),
    }
}
