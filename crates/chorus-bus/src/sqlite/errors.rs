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

pub(crate) use crate::delivery::stored_json_error as json_error;
