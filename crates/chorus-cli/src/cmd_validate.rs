//! `chorus validate`: check messages, conversations, handoffs and data parts.

use std::path::PathBuf;
use std::process::ExitCode;

use chorus_core::validate::Limits;
use chorus_core::{Kind, Problem, Severity, Validator};
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::input::read_input;

/// Arguments of `chorus validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// What the documents are; `auto` tells from their shape.
    #[arg(long, default_value = "auto", value_parser = parse_kind)]
    kind: KindChoice,
    /// Output: one line per problem, or a JSON array.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// A directory of `<type>_data.schema.json` files for handoff data.
    #[arg(long, value_name = "DIR")]
    schemas: Option<PathBuf>,
    /// Deepest nesting allowed (at most 512).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=512))]
    max_depth: u16,
    /// Largest document allowed, in bytes.
    #[arg(long, default_value_t = Limits::default().max_bytes)]
    max_bytes: usize,
    /// Files to validate; `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<String>,
}

/// `auto` or a fixed kind.
#[derive(Debug, Clone, Copy)]
struct KindChoice(Option<Kind>);

fn parse_kind(name: &str) -> Result<KindChoice, String> {
    if name == "auto" {
        return Ok(KindChoice(None));
    }
    name.parse()
        .map(|kind| KindChoice(Some(kind)))
        .map_err(|e| format!("{e}, or auto"))
}

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

/// One problem as the JSON output shows it.
#[derive(Serialize)]
struct Row<'a> {
    file: &'a str,
    pointer: &'a str,
    message: &'a str,
    hint: Option<&'a str>,
    severity: Severity,
}

/// Runs `chorus validate`: 0 all valid, 1 any rejected, 2 usage or I/O error.
pub fn run(args: ValidateArgs) -> ExitCode {
    let mut validator = Validator::new().with_limits(Limits {
        max_depth: usize::from(args.max_depth),
        max_bytes: args.max_bytes,
    });
    if let Some(dir) = &args.schemas
        && let Err(error) = validator.load_data_schema_dir(dir)
    {
        errln!("chorus validate: {error}");
        return ExitCode::from(2);
    }
    let mut rejected = false;
    let mut io_failed = false;
    let mut results: Vec<(String, Vec<Problem>)> = Vec::new();
    for file in &args.files {
        match read_input(file) {
            Err(message) => {
                errln!("{message}");
                io_failed = true;
            }
            Ok(bytes) => {
                let report = validator.validate_bytes(&bytes, args.kind.0);
                rejected |= !report.is_valid();
                if args.format == Format::Text {
                    print_text(file, report.kind, &report.problems);
                }
                results.push((file.clone(), report.problems));
            }
        }
    }
    if args.format == Format::Json {
        let rows: Vec<Row> = results
            .iter()
            .flat_map(|(file, problems)| {
                problems.iter().map(move |p| Row {
                    file,
                    pointer: &p.pointer,
                    message: &p.message,
                    hint: p.hint.as_deref(),
                    severity: p.severity,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&rows).expect("rows serialize")
        );
    }
    match (io_failed, rejected) {
        (true, _) => ExitCode::from(2),
        (false, true) => ExitCode::from(1),
        (false, false) => ExitCode::SUCCESS,
    }
}

fn print_text(file: &str, kind: Option<Kind>, problems: &[Problem]) {
    if problems.iter().all(|p| p.severity == Severity::Warning) {
        let kind = kind.map_or("document", Kind::name);
        outln!("{file}: ok ({kind})");
    }
    for problem in problems {
        let pointer = if problem.pointer.is_empty() {
            "(root)"
        } else {
            &problem.pointer
        };
        let level = if problem.severity == Severity::Warning {
            "warning: "
        } else {
            ""
        };
        let hint = problem
            .hint
            .as_ref()
            .map(|h| format!(" (hint: {h})"))
            .unwrap_or_default();
        outln!("{file}: {pointer}: {level}{}{hint}", problem.message);
    }
}
