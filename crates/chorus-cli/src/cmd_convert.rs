//! `chorus convert`: convert a conversation between provider formats through chorus.

use chorus_formats::{EncodeOptions, Error, Format, NamePolicy, convert};

use crate::conversation::parse_format;
use crate::error::CliError;
use crate::input::read_text;

/// What to do with speaker names on targets without a `name` field.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Names {
    /// Write `name: ` before the text.
    Prefix,
    /// Fold other agents' turns into a `<history>` user message.
    History,
}

/// Arguments of `chorus convert`.
#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// Source format (see `chorus formats`).
    #[arg(long, value_name = "FMT", value_parser = parse_format)]
    pub from: Format,
    /// Target format (see `chorus formats`).
    #[arg(long, value_name = "FMT", value_parser = parse_format)]
    pub to: Format,
    /// Fail (exit 1) when the target cannot carry everything.
    #[arg(long)]
    pub strict: bool,
    /// Text formats: end with the opening of an assistant turn.
    #[arg(long)]
    pub add_generation_prompt: bool,
    /// Qwen3: `false` adds the empty think block after the generation prompt.
    #[arg(long, value_name = "true|false")]
    pub enable_thinking: Option<bool>,
    /// Speaker names on targets without a name field.
    #[arg(long, value_enum, default_value = "prefix")]
    pub names: Names,
    /// Input file, or `-` for standard input.
    #[arg(value_name = "FILE|-")]
    pub file: String,
}

/// Prints the converted document on stdout and the losses as JSON lines on stderr.
pub fn run(args: ConvertArgs) -> Result<(), CliError> {
    let input = read_text(&args.file)?;
    let options = EncodeOptions {
        names: match args.names {
            Names::Prefix => NamePolicy::Prefix,
            Names::History => NamePolicy::History,
        },
        add_generation_prompt: args.add_generation_prompt,
        enable_thinking: args.enable_thinking,
    };
    match convert(args.from, args.to, &input, &options, args.strict) {
        Ok(encoded) => {
            for loss in &encoded.losses {
                errln!("{}", serde_json::to_string(loss).unwrap_or_default());
            }
            out!("{}", encoded.value);
            Ok(())
        }
        Err(Error::Lossy(losses)) => {
            for loss in &losses {
                errln!("{}", serde_json::to_string(loss).unwrap_or_default());
            }
            Err(CliError::rejected(format!(
                "--strict: {} cannot carry {} item(s) of the input",
                args.to.id(),
                losses.len()
            )))
        }
        Err(other) => Err(CliError::rejected(format!("{}: {other}", args.file))),
    }
}
