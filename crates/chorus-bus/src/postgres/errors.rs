//! How the PostgreSQL client's and the pool's errors become the bus's.

use deadpool_postgres::PoolError;

use crate::error::BusError;

/// A client error: the server's message with its SQLSTATE code when it answered, else what
/// broke (a lost connection, a timeout). All of them may pass: [`BusError::is_unavailable`].
pub(crate) fn pg_error(e: tokio_postgres::Error) -> BusError {
    let detail = match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        // With its causes: "error performing TLS handshake" says nothing of the certificate.
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            text
        }
    };
    BusError::Backend {
        backend: "postgres",
        detail,
    }
}

/// No connection from the pool: the database is down or every connection is busy.
pub(crate) fn pool_error(e: PoolError) -> BusError {
    match e {
        PoolError::Backend(e) => pg_error(e),
        PoolError::Timeout(_) => BusError::Backend {
            backend: "postgres",
            detail: "no connection to the database within its time (the database is \
                     unreachable, or every pooled connection is busy: raise max_connections=)"
                .into(),
        },
        other => BusError::Backend {
            backend: "postgres",
            detail: other.to_string(),
        },
    }
}

pub(crate) use crate::delivery::stored_json_error as json_error;
