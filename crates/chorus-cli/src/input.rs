//! Reading command inputs: a file path or `-` for standard input.

use std::io::Read;
use std::path::Path;

/// Reads all bytes of `path`, or of standard input when `path` is `-`.
pub fn read_input(path: &str) -> Result<Vec<u8>, String> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("-: cannot read standard input: {e}"))?;
        return Ok(bytes);
    }
    std::fs::read(Path::new(path)).map_err(|e| format!("{path}: cannot read: {e}"))
}
