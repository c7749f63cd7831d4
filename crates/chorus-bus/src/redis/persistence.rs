//! What a Redis server keeps across a restart, read from its configuration.
//!
//! A publish is acknowledged once Redis has the message in memory; whether it survives a
//! restart depends on the server's `appendonly`, `appendfsync` and `save` settings.

use std::fmt;
use std::time::Duration;

use crate::error::{BusError, BusResult};

/// How much of what Redis acknowledged survives a restart of the Redis server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Persistence {
    /// Append-only file fsync'd on every write: nothing acknowledged is lost.
    Always,
    /// Append-only file fsync'd every second (or when the OS flushes): a clean restart keeps
    /// everything, a crash of the machine may lose the last second or so.
    AppendOnly {
        /// The server's `appendfsync` setting (`everysec` or `no`).
        fsync: String,
    },
    /// Snapshots only: a crash loses what came after the last snapshot (minutes).
    Snapshots {
        /// The server's `save` points.
        save: String,
    },
    /// Nothing on disk: every restart loses every message.
    Nothing,
    /// The settings could not be read (managed services often disable `CONFIG`).
    Unknown {
        /// Why they could not be read.
        why: String,
    },
}

impl Persistence {
    /// True when a message acknowledged by Redis survives a crash of the Redis process with at
    /// most about a second lost (`appendonly yes`); snapshots and no persistence do not.
    pub fn keeps_acknowledged(&self) -> bool {
        matches!(self, Persistence::Always | Persistence::AppendOnly { .. })
    }

    /// Reads the settings from the settings Redis reports (`CONFIG GET`'s pairs).
    fn from_settings(appendonly: &str, appendfsync: &str, save: &str) -> Persistence {
        match (appendonly, appendfsync) {
            ("yes", "always") => Persistence::Always,
            ("yes", fsync) => Persistence::AppendOnly {
                fsync: fsync.to_owned(),
            },
            _ if !save.trim().is_empty() => Persistence::Snapshots {
                save: save.to_owned(),
            },
            _ => Persistence::Nothing,
        }
    }
}

impl fmt::Display for Persistence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Persistence::Always => write!(f, "append-only file fsync'd on every write"),
            Persistence::AppendOnly { fsync } => write!(
                f,
                "append-only file with appendfsync {fsync}: a crash may lose about the last second"
            ),
            Persistence::Snapshots { save } => write!(
                f,
                "snapshots only (save {save:?}): a crash loses every message since the last snapshot"
            ),
            Persistence::Nothing => write!(
                f,
                "no persistence (appendonly no, no save points): a restart loses every message"
            ),
            Persistence::Unknown { why } => write!(f, "unknown ({why})"),
        }
    }
}

/// Connects to `url` and reads what the Redis server persists.
pub async fn persistence(url: &str) -> BusResult<Persistence> {
    // The primary's: a store address may name several servers, or Sentinels.
    let url = super::failover::Topology::parse(url)?.primary().await?;
    let url = url.as_str();
    let client = redis::Client::open(url).map_err(super::redis_error)?;
    let mut con = tokio::time::timeout(
        Duration::from_secs(3),
        client.get_multiplexed_async_connection(),
    )
    .await
    .map_err(|_| super::redis_error(format!("connecting to {url} timed out")))?
    .map_err(|e| super::redis_error(format!("cannot connect to {url}: {e}")))?;
    let mut settings = Vec::with_capacity(3);
    for name in ["appendonly", "appendfsync", "save"] {
        let pair: Result<Vec<String>, _> = redis::cmd("CONFIG")
            .arg("GET")
            .arg(name)
            .query_async(&mut con)
            .await;
        match pair {
            Ok(pair) if pair.len() == 2 => settings.push(pair[1].clone()),
            Ok(_) => {
                return Ok(Persistence::Unknown {
                    why: format!("CONFIG GET {name} gave no value"),
                });
            }
            Err(e) => {
                return Ok(Persistence::Unknown {
                    why: format!("CONFIG GET {name} was refused: {e}"),
                });
            }
        }
    }
    Ok(Persistence::from_settings(
        &settings[0],
        &settings[1],
        &settings[2],
    ))
}

/// An error for a store whose acknowledged messages would not survive a restart.
pub fn volatile_error(url: &str, found: &Persistence) -> BusError {
    BusError::Config {
        what: "store".into(),
        detail: format!(
            "the Redis server at {url} keeps {found}; acknowledged messages would not survive \
             a restart of Redis. Turn on its append-only file (`CONFIG SET appendonly yes`, \
             and `appendonly yes` in redis.conf), or set accept_volatile_store = true in \
             chorus.toml (--accept-volatile-store) to serve anyway"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_settings() {
        assert_eq!(
            Persistence::from_settings("yes", "always", ""),
            Persistence::Always
        );
        let everysec = Persistence::from_settings("yes", "everysec", "3600 1");
        assert!(matches!(&everysec, Persistence::AppendOnly { fsync } if fsync == "everysec"));
        assert!(everysec.keeps_acknowledged());
        let snapshots = Persistence::from_settings("no", "everysec", "3600 1 300 100");
        assert!(matches!(snapshots, Persistence::Snapshots { .. }));
        assert!(!snapshots.keeps_acknowledged());
        let nothing = Persistence::from_settings("no", "everysec", "");
        assert_eq!(nothing, Persistence::Nothing);
        assert!(!nothing.keeps_acknowledged());
        assert!(
            volatile_error("redis://x", &nothing)
                .to_string()
                .contains("appendonly yes")
        );
    }
}
