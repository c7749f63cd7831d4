//! `chorus trim`: the kept conversation on stdout, the report on stderr (JSON).

use chorus_context::command::{CounterChoice, TrimArgs as Request, TrimStrategy, trim};
use chorus_formats::{EncodeOptions, Format};
use clap::{Args, ValueEnum};

use crate::conversation::{parse_format, read_conversation};
use crate::error::CliError;
use crate::input::read_text;
use crate::output::warn;

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
pub fn run(args: TrimArgs) -> Result<(), CliError> {
    let conversation = read_conversation(&args.file, args.from)?;
    let summary = args.summary.as_deref().map(read_text).transpose()?;
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
    let out = trim(&conversation, &request).map_err(|e| CliError::context(&args.file, e))?;
    warn(&out.warnings);
    let encoded = args
        .from
        .encode(&out.kept, &EncodeOptions::default())
        .map_err(|e| CliError::rejected(format!("{}: {e}", args.file)))?;
    let mut report = out.report;
    if !encoded.losses.is_empty() {
        report["format_losses"] = serde_json::to_value(&encoded.losses).unwrap_or_default();
    }
    outln!("{}", encoded.value);
    errln!("{}", serde_json::to_string(&report).unwrap_or_default());
    Ok(())
}
