//! The one error of every command and the exit code it means (the project's standard: 0 done,
//! 1 the input was read and refused, 2 usage or I/O); `main` prints it and exits with its code.

use std::fmt;
use std::process::ExitCode;

use crate::counting::CommandError;

/// How a command failed, as its exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The input was read and refused (exit 1).
    Rejected,
    /// Bad arguments, or a file, service or output that cannot be used (exit 2).
    Usage,
}

impl Exit {
    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Rejected => 1,
            Exit::Usage => 2,
        }
    }
}

/// Why a command failed: its exit, and what to print after the command's name (nothing when
/// the command has said it already).
#[derive(Debug)]
pub struct CliError {
    exit: Exit,
    message: Option<String>,
}

impl CliError {
    /// The input was read and refused (exit 1).
    pub fn rejected(message: impl fmt::Display) -> Self {
        CliError {
            exit: Exit::Rejected,
            message: Some(message.to_string()),
        }
    }

    /// Bad arguments, or something that cannot be read, written or reached (exit 2).
    pub fn usage(message: impl fmt::Display) -> Self {
        CliError {
            exit: Exit::Usage,
            message: Some(message.to_string()),
        }
    }

    /// A failure the command has reported already (in its output, or a line per input).
    pub fn reported(exit: Exit) -> Self {
        CliError {
            exit,
            message: None,
        }
    }

    /// A chorus-context command's error about the conversation in `file`.
    pub fn context(file: &str, error: CommandError) -> Self {
        match error {
            CommandError::Input(e) => CliError::rejected(format!("{file}: {e}")),
            CommandError::Usage(e) => CliError::usage(e),
        }
    }

    /// What to print after the command's prefix; none when the command has said it already.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The process exit code.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.exit.code())
    }
}

/// The message alone, for a command that reports a failure and goes on.
impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message.as_deref().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejected_input_exits_1_and_usage_2() {
        assert_eq!(CliError::rejected("x").exit.code(), 1);
        assert_eq!(CliError::usage("x").exit.code(), 2);
        let reported = CliError::reported(Exit::Rejected);
        assert_eq!((reported.exit, reported.message()), (Exit::Rejected, None));
        let input = CliError::context("c.json", CommandError::Input("bad role".into()));
        assert_eq!(
            (input.exit, input.to_string()),
            (Exit::Rejected, "c.json: bad role".into())
        );
        let usage = CliError::context("c.json", CommandError::Usage("no tokenizer".into()));
        assert_eq!(
            (usage.exit, usage.to_string()),
            (Exit::Usage, "no tokenizer".into())
        );
    }
}
