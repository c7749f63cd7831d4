//! `chorus schema`: print the JSON Schema of a document kind or of a handoff type's data.

use chorus_core::Kind;
use chorus_core::handoff::HandoffType;
use chorus_core::schema::handoff_data_schema;
use clap::Args;

use crate::error::CliError;

/// Arguments of `chorus schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// message, conversation, handoff, harmony-handoff or data.
    #[arg(value_parser = |s: &str| s.parse::<Kind>())]
    kind: Kind,
    /// With `handoff`: print only the data schema of this handoff type (e.g. ESCALATION).
    #[arg(long, value_name = "TYPE")]
    handoff_type: Option<String>,
}

/// Prints the schema; 2 when the handoff type has no built-in schema.
pub fn run(args: SchemaArgs) -> Result<(), CliError> {
    let schema = match (&args.handoff_type, args.kind) {
        (None, kind) => kind.schema(),
        (Some(name), Kind::Handoff) => match handoff_data_schema(&HandoffType::parse(name)) {
            Some(schema) => schema,
            None => {
                let names: Vec<_> = HandoffType::STANDARD
                    .iter()
                    .map(HandoffType::as_str)
                    .collect();
                return Err(CliError::usage(format!(
                    "no built-in data schema for {name:?}; expected one of {}",
                    names.join(", ")
                )));
            }
        },
        (Some(_), kind) => {
            return Err(CliError::usage(format!(
                "--handoff-type goes with the kind `handoff`, not `{kind}`"
            )));
        }
    };
    outln!(
        "{}",
        serde_json::to_string_pretty(&schema).expect("schemas serialize")
    );
    Ok(())
}
