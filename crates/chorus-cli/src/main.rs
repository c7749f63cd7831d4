//! The `chorus` command: thin commands over the chorus crates.
// All output goes through `output`, which ends quietly on a closed pipe instead of panicking.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// With feature `mimalloc`, chorus allocates with mimalloc (faster under the server's load than
/// the system allocator; see docs/performance.md).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[macro_use]
mod output;
mod service;

mod cmd_agent;
mod cmd_bench;
mod cmd_completions;
mod cmd_confirm;
mod cmd_convert;
mod cmd_count;
mod cmd_formats;
mod cmd_gateway;
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
mod telemetry;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

use crate::error::CliError;

/// chorus: one message protocol for multi-agent LLM systems.
#[derive(Debug, Parser)]
#[command(
    name = "chorus",
    version,
    about,
    after_help = "Machine-readable output: `--format json` or its short form `--json` \
                  (validate, formats, confirm, run, count, bench). Commands whose output is a document \
                  (convert, trim, schema) print it as JSON. A closed output pipe (`chorus … | head`) ends a command quietly.\n\n\
                  Example:\n  chorus validate examples/seeds/*.json\n  chorus serve --config examples/clients/chorus.toml"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate messages, conversations, handoffs and data parts.
    #[command(after_help = "Example:\n  chorus validate examples/seeds/*.json\n  \
                            chorus validate --format json --kind handoff - < packet.json")]
    Validate(cmd_validate::ValidateArgs),
    /// Print the JSON Schema of a document kind.
    #[command(after_help = "Example:\n  chorus schema handoff --handoff-type ESCALATION")]
    Schema(cmd_schema::SchemaArgs),
    /// Render and parse the Harmony format of gpt-oss.
    #[command(after_help = "Example:\n  chorus harmony render conversation.json\n  \
                            chorus harmony parse --lenient completion.txt")]
    Harmony(cmd_harmony::HarmonyArgs),
    /// Convert conversations between provider formats, reporting losses.
    #[command(
        after_help = "Example:\n  chorus convert --from openai-chat --to anthropic chat.json"
    )]
    Convert(cmd_convert::ConvertArgs),
    /// Print the capability table of each format.
    #[command(after_help = "Example:\n  chorus formats --format json")]
    Formats(cmd_formats::FormatsArgs),
    /// Count the tokens of a conversation for a model.
    #[command(after_help = "Example:\n  chorus count --model gpt-4o conversation.json")]
    Count(cmd_count::CountArgs),
    /// Trim a conversation to a token budget without breaking tool calls.
    #[command(
        after_help = "Example:\n  chorus trim --model gpt-4o --max-tokens 8000 conversation.json"
    )]
    Trim(cmd_trim::TrimArgs),
    /// Prepare media for models (video frames and audio).
    #[command(after_help = "Example:\n  chorus media frames --count 8 clip.mp4")]
    Media(cmd_media::MediaArgs),
    /// Benchmark a bus backend.
    #[command(after_help = "Example:\n  chorus bench bus --backend memory")]
    Bench(cmd_bench::BenchArgs),
    /// Serve the hub over HTTP: publish, inbox streams, ack, metrics.
    #[command(
        after_help = "Example:\n  chorus serve --config examples/clients/chorus.toml\n  \
                            printf %s \"$TOKEN\" | chorus serve --hash-token -"
    )]
    Serve(cmd_serve::ServeArgs),
    /// Serve gpt-oss to OpenAI clients from a raw completions engine (vLLM, SGLang).
    #[command(
        after_help = "Example:\n  chorus gateway --upstream http://127.0.0.1:8000/v1 --model openai/gpt-oss-20b\n  \
                            printf %s \"$KEY\" | chorus gateway --hash-key -"
    )]
    Gateway(cmd_gateway::GatewayArgs),
    /// Run a flow of agents from a TOML file and write its transcript.
    #[command(
        after_help = "Example:\n  chorus run examples/support-desk.toml --transcript t.jsonl"
    )]
    Run(cmd_run::RunArgs),
    /// Run one agent of a flow as a long-lived worker on a chorus server.
    #[command(
        after_help = "Example:\n  chorus agent run examples/support-desk.toml --agent technical_support --server http://127.0.0.1:7700"
    )]
    Agent(cmd_agent::AgentArgs),
    /// List, approve and reject tool calls waiting for a person's confirmation.
    #[command(
        after_help = "Example:\n  chorus confirm list --server http://127.0.0.1:7700 --admin-token \"$ADMIN\""
    )]
    Confirm(cmd_confirm::ConfirmArgs),
    /// Print a shell's completion script for chorus (bash, zsh, fish, elvish, powershell).
    #[command(
        after_help = "Example:\n  chorus completions bash > ~/.local/share/bash-completion/completions/chorus"
    )]
    Completions(cmd_completions::CompletionsArgs),
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
        Command::Gateway(args) => ("chorus gateway", cmd_gateway::run(args)),
        Command::Run(args) => ("chorus run", cmd_run::run(args)),
        Command::Agent(args) => ("chorus agent", cmd_agent::run(args)),
        Command::Confirm(args) => ("chorus confirm", cmd_confirm::run(args)),
        Command::Completions(args) => (
            "chorus completions",
            cmd_completions::run(args, Cli::command()),
        ),
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

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// The words of an example line as the shell would pass them to chorus: the command after
    /// the last pipe, before any redirection, quotes removed (the examples quote single words).
    fn words(line: &str) -> Vec<String> {
        let command = line.rsplit(" | ").next().unwrap_or(line);
        command
            .split_whitespace()
            .take_while(|w| !w.starts_with('<') && !w.starts_with('>'))
            .map(|w| w.trim_matches('"').to_owned())
            .collect()
    }

    #[test]
    fn every_command_has_an_example_in_its_help_and_each_example_parses() {
        let cli = Cli::command();
        for sub in cli.get_subcommands() {
            let help = sub
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            let examples: Vec<&str> = help
                .split_once("Example:")
                .map(|(_, rest)| {
                    rest.lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty())
                        .collect()
                })
                .unwrap_or_default();
            assert!(
                !examples.is_empty(),
                "`chorus {}` has no example",
                sub.get_name()
            );
            for example in examples {
                let words = words(example);
                assert_eq!(
                    words.first().map(String::as_str),
                    Some("chorus"),
                    "{example}"
                );
                if let Err(e) = Cli::try_parse_from(&words) {
                    panic!("the example {example:?} does not parse: {e}");
                }
            }
        }
    }
}
