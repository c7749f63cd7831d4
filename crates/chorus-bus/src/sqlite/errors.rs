//! How SQLite's errors become the bus's.

use rusqlite::ErrorCode;

use crate::error::BusError;

/// Maps a SQLite error: damage becomes [`BusError::Corrupt`], the rest [`BusError::Storage`].
pub(crate) fn storage_error(e: rusqlite::Error) -> BusError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            BusError::Corrupt(e.to_string())
        }
        Some(ErrorCode::DiskFull) => BusError::Storage(format!("disk full: {e}")),
        _ => BusError::Storage(e.to_string()),
    }
}

pub(crate) fn json_error(e: serde_json::Error) -> BusError {
    BusError::Corrupt(format!("a stored JSON column does not parse: {e}"))
}
