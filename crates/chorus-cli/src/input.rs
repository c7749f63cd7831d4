//! Reading command inputs: a file path, or `-` for standard input.

use std::io::Read;
use std::path::Path;

use crate::error::CliError;

/// Reads all bytes of `path`, or of standard input when `path` is `-` (exit 2 when it cannot).
pub fn read_bytes(path: &str) -> Result<Vec<u8>, CliError> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::usage(format!("-: cannot read standard input: {e}")))?;
        return Ok(bytes);
    }
    std::fs::read(Path::new(path)).map_err(|e| CliError::usage(format!("{path}: cannot read: {e}")))
}

/// Reads `path` (or `-`) as UTF-8 text; text that is not UTF-8 cannot be read either (exit 2).
pub fn read_text(path: &str) -> Result<String, CliError> {
    String::from_utf8(read_bytes(path)?)
        .map_err(|e| CliError::usage(format!("{path}: expected UTF-8 text; {e}")))
}
