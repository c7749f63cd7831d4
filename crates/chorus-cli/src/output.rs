//! Every command's standard output and error go through here. A reader that closed the pipe
//! (`chorus … | head -1`) ends the command quietly with exit 0, as it has all it wanted; any
//! other write error on standard output (a full disk) ends it with exit 2 and a message.

use std::fmt;
use std::io::{self, Write};
use std::process;

use crate::error::Exit;

/// Writes formatted text to standard output (see [`print`]).
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::print(format_args!($($arg)*)) };
}

/// Writes formatted text and a newline to standard output (see [`print`]).
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::print(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Writes formatted text and a newline to standard error (see [`eprint`]).
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::eprint(format_args!("{}\n", format_args!($($arg)*))) };
}

/// Writes `text` to standard output and flushes it, so that a failure is seen here; a closed
/// pipe exits 0 at once, another error exits 2 naming it.
pub fn print(text: fmt::Arguments<'_>) {
    let mut stdout = io::stdout().lock();
    if let Err(error) = stdout.write_fmt(text).and_then(|()| stdout.flush()) {
        stop(&error);
    }
}

/// Writes `text` to standard error; a failure is ignored, as there is nowhere left to report it.
pub fn eprint(text: fmt::Arguments<'_>) {
    let _ = io::stderr().lock().write_fmt(text);
}

/// Ends the process after a failed write to standard output.
fn stop(error: &io::Error) -> ! {
    if error.kind() == io::ErrorKind::BrokenPipe {
        process::exit(0);
    }
    eprint(format_args!(
        "chorus: cannot write to standard output: {error}\n"
    ));
    process::exit(i32::from(Exit::Usage.code()));
}

/// Prints each of `warnings` on standard error.
pub fn warn(warnings: &[String]) {
    for warning in warnings {
        eprint(format_args!("warning: {warning}\n"));
    }
}

/// How a command prints its result: `--format text|json`, with `--json` the same as
/// `--format json`; every command with a machine-readable output takes both spellings.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FormatArgs {
    /// Output for people (text) or for programs (json).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The same as `--format json`.
    #[arg(long, conflicts_with = "format")]
    json: bool,
}

/// The output formats of [`FormatArgs`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    #[default]
    Text,
    Json,
}

impl FormatArgs {
    /// True when the output is to be JSON.
    pub fn json(&self) -> bool {
        self.json || self.format == Format::Json
    }
}
