//! The `chorus` command: thin commands over the chorus crates.

mod cmd_schema;
mod cmd_validate;
mod input;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// chorus: one message protocol for multi-agent LLM systems.
#[derive(Debug, Parser)]
#[command(name = "chorus", version, about)]
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
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Validate(args) => cmd_validate::run(args),
        Command::Schema(args) => cmd_schema::run(args),
    }
}
