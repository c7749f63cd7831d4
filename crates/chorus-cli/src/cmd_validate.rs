//! `chorus validate`: check messages, conversations, handoffs and data parts, one document per
//! file or one per line of a JSON Lines file (`.jsonl`, `.ndjson` or `--jsonl`).

use std::path::PathBuf;

use chorus_core::validate::Limits;
use chorus_core::{Kind, Problem, Severity, Validator};
use clap::Args;
use serde::Serialize;

use crate::error::{CliError, Exit};
use crate::input::read_bytes;
use crate::output::FormatArgs;

/// Arguments of `chorus validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// What the documents are; `auto` tells from their shape.
    #[arg(long, default_value = "auto", value_parser = parse_kind)]
    kind: KindChoice,
    /// Output: one line per problem (text), or a JSON array of them (json).
    #[command(flatten)]
    output: FormatArgs,
    /// A directory of `<type>_data.schema.json` files for handoff data.
    #[arg(long, value_name = "DIR")]
    schemas: Option<PathBuf>,
    /// Deepest nesting allowed (at most 512).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u16).range(1..=512))]
    max_depth: u16,
    /// Largest document allowed, in bytes.
    #[arg(long, default_value_t = Limits::default().max_bytes)]
    max_bytes: usize,
    /// Read every input as JSON Lines, one document per line (files ending in `.jsonl` or
    /// `.ndjson` always are); problems name the line as FILE:LINE.
    #[arg(long)]
    jsonl: bool,
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

/// One problem as the JSON output shows it.
#[derive(Serialize)]
struct Row<'a> {
    file: &'a str,
    /// The line of a JSON Lines input (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<usize>,
    pointer: &'a str,
    message: &'a str,
    hint: Option<&'a str>,
    severity: Severity,
}

/// The problems of one document and where it was.
struct Checked<'a> {
    file: &'a str,
    line: Option<usize>,
    problems: Vec<Problem>,
}

/// Runs `chorus validate`: 0 all valid, 1 any rejected, 2 usage or I/O error.
pub fn run(args: ValidateArgs) -> Result<(), CliError> {
    let mut validator = Validator::new().with_limits(Limits {
        max_depth: usize::from(args.max_depth),
        max_bytes: args.max_bytes,
    });
    if let Some(dir) = &args.schemas {
        validator
            .load_data_schema_dir(dir)
            .map_err(CliError::usage)?;
    }
    let mut rejected = false;
    let mut io_failed = false;
    let mut results: Vec<Checked> = Vec::new();
    for file in &args.files {
        let bytes = match read_bytes(file) {
            Ok(bytes) => bytes,
            Err(error) => {
                errln!("{error}");
                io_failed = true;
                continue;
            }
        };
        let jsonl = args.jsonl || is_jsonl_name(file);
        let documents = if jsonl {
            json_lines(&bytes)
        } else {
            vec![(None, bytes.as_slice())]
        };
        if jsonl && documents.is_empty() && !args.output.json() {
            outln!("{file}: ok (no documents)");
        }
        for (line, document) in documents {
            let report = validator.validate_bytes(document, args.kind.0);
            rejected |= !report.is_valid();
            let checked = Checked {
                file,
                line,
                problems: report.problems,
            };
            if !args.output.json() {
                print_text(&checked, report.kind);
            } else {
                results.push(checked);
            }
        }
    }
    if args.output.json() {
        let rows: Vec<Row> = results
            .iter()
            .flat_map(|checked| {
                checked.problems.iter().map(move |p| Row {
                    file: checked.file,
                    line: checked.line,
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
        (true, _) => Err(CliError::reported(Exit::Usage)),
        (false, true) => Err(CliError::reported(Exit::Rejected)),
        (false, false) => Ok(()),
    }
}

/// True for a file name that says JSON Lines.
fn is_jsonl_name(file: &str) -> bool {
    let lower = file.to_ascii_lowercase();
    lower.ends_with(".jsonl") || lower.ends_with(".ndjson")
}

/// The documents of a JSON Lines input with their 1-based line numbers; blank lines (and a
/// `\r` before each newline) are skipped.
fn json_lines(bytes: &[u8]) -> Vec<(Option<usize>, &[u8])> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (Some(i + 1), line.strip_suffix(b"\r").unwrap_or(line)))
        .filter(|(_, line)| !line.trim_ascii().is_empty())
        .collect()
}

fn print_text(checked: &Checked, kind: Option<Kind>) {
    let place = match checked.line {
        Some(line) => format!("{}:{line}", checked.file),
        None => checked.file.to_owned(),
    };
    let problems = &checked.problems;
    if problems.iter().all(|p| p.severity == Severity::Warning) {
        let kind = kind.map_or("document", Kind::name);
        outln!("{place}: ok ({kind})");
    }
    for problem in problems {
        outln!("{place}: {problem}");
    }
}
