//! `chorus formats`: the capability table of every format.

use chorus_formats::Format;

use crate::error::CliError;
use crate::output::FormatArgs;

/// Arguments of `chorus formats`.
#[derive(Debug, clap::Args)]
pub struct FormatsArgs {
    /// Tables (text) or an array of them (json).
    #[command(flatten)]
    pub output: FormatArgs,
}

/// Prints what each format carries.
pub fn run(args: FormatsArgs) -> Result<(), CliError> {
    let tables: Vec<_> = Format::ALL.iter().map(|f| f.capabilities()).collect();
    if args.output.json() {
        outln!(
            "{}",
            serde_json::to_string_pretty(&tables).unwrap_or_default()
        );
    } else {
        for table in tables {
            outln!("{table}");
        }
    }
    Ok(())
}
