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
mod counting;
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

/// Runs the command; its error is printed after the command's prefix (its name, or `error` for
/// the conversion and token commands, as they have always said) and sets the exit code.
fn main() -> ExitCode {
    let (prefix, result): (&str, Result<(), CliError>) = match Cli::parse().command {
        Command::Validate(args) => ("chorus validate", cmd_validate::run(args)),
        Command::Schema(args) => ("chorus schema", cmd_schema::run(args)),
        Command::Harmony(args) => ("chorus harmony", cmd_harmony::run(args)),
        Command::Convert(args) => ("error", cmd_convert::run(args)),
        Command::Formats(args) => ("chorus formats", cmd_formats::run(args)),
        Command::Count(args) => ("error", cmd_count::run(args)),
        Command::Trim(args) => ("error", cmd_trim::run(args)),
        Command::Media(args) => ("error", cmd_media::run(args)),
        Command::Bench(args) => (args.prefix(), cmd_bench::run(args)),
        Command::Serve(args) => ("chorus serve", cmd_serve::run(args)),
        Command::Run(args) => ("chorus run", cmd_run::run(args)),
        Command::Confirm(args) => ("chorus confirm", cmd_confirm::run(args)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if let Some(message) = error.message() {
                errln!("{prefix}: {message}");
            }
            error.exit_code()
        }
    }
}
