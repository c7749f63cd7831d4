//! `chorus completions SHELL`: the shell's completion script, generated from the command's own
//! definition by clap_complete.

use clap::Args;
use clap_complete::Shell;

use crate::error::CliError;

/// Arguments of `chorus completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Prints the completion script of `command` for the shell.
pub fn run(args: CompletionsArgs, mut command: clap::Command) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "chorus", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(())
}
