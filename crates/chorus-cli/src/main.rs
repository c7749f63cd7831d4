//! The `chorus` command: thin commands over the chorus crates.
// All output goes through `output`, which ends quietly on a closed pipe instead of panicking.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod output;

mod cmd_bench;
mod cmd_confirm;
mod cmd_convert;
mod cmd_count;
mod cmd_formats;
mod cmd_harmony;
mod cmd_media;
mod cmd_run;
mod cmd_schema;
mod cmd_serve;
mod cmd_trim;
mod cmd_validate;
mod conversation;
mod error;
mod input;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliError;

/// chorus: one message protocol for multi-agent LLM systems.
#[derive(Debug, Parser)]
#[command(
    name = "chorus",
    version,
    about,
    after_help = "Machine-readable output: `--format json` or its short form `--json` \
                  (validate, formats, confirm). A closed output pipe (`chorus … | head`) ends a command quietly."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate messages, conversations, handoffs and data parts.
    Validate(cmd_validate::ValidateArgs),
    /// Print the JSON Schema of a document kind.
    Schema(cmd_schema::SchemaArgs),
    /// Render and parse the Harmony format of gpt-oss.
    Harmony(cmd_harmony::HarmonyArgs),
    /// Convert conversations between provider formats, reporting losses.
    Convert(cmd_convert::ConvertArgs),
    /// Print the capability table of each format.
    Formats(cmd_formats::FormatsArgs),
    /// Count the tokens of a conversation for a model.
    Count(cmd_count::CountArgs),
    /// Trim a conversation to a token budget without breaking tool calls.
    Trim(cmd_trim::TrimArgs),
    /// Prepare media for models (video frames and audio).
    Media(cmd_media::MediaArgs),
    /// Benchmark a bus backend.
    Bench(cmd_bench::BenchArgs),
    /// Serve the hub over HTTP: publish, inbox streams, ack, metrics.
    Serve(cmd_serve::ServeArgs),
    /// Run a flow of agents from a TOML file and write its transcript.
    Run(cmd_run::RunArgs),
    /// List, approve and reject tool calls waiting for a person's confirmation.
    Confirm(cmd_confirm::ConfirmArgs),
}

/// Runs the command; its error is printed after the command's prefix and sets the exit code.
fn main() -> ExitCode {
    let command = Cli::parse().command;
    let prefix = command.prefix();
    match command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => error.report(prefix),
    }
}

impl Command {
    /// What starts the command's error line.
    fn prefix(&self) -> &'static str {
        match self {
            Command::Convert(_) | Command::Count(_) | Command::Trim(_) | Command::Media(_) => {
                "error"
            }
            Command::Validate(_) => "chorus validate",
            Command::Schema(_) => "chorus schema",
            Command::Harmony(_) => "chorus harmony",
            Command::Formats(_) => "chorus formats",
            Command::Bench(args) => args.prefix(),
            Command::Serve(_) => "chorus serve",
            Command::Run(_) => "chorus run",
            Command::Confirm(_) => "chorus confirm",
        }
    }

    /// Runs the command.
    fn run(self) -> Result<(), CliError> {
        match self {
            Command::Validate(args) => cmd_validate::run(args),
            Command::Schema(args) => cmd_schema::run(args),
            Command::Harmony(args) => cmd_harmony::run(args),
            Command::Convert(args) => cmd_convert::run(args),
            Command::Formats(args) => cmd_formats::run(args),
            Command::Count(args) => cmd_count::run(args),
            Command::Trim(args) => cmd_trim::run(args),
            Command::Media(args) => cmd_media::run(args),
            Command::Bench(args) => cmd_bench::run(args),
            Command::Serve(args) => cmd_serve::run(args),
            Command::Run(args) => cmd_run::run(args),
            Command::Confirm(args) => cmd_confirm::run(args),
        }
    }
}
