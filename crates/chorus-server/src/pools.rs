//! `[pools.NAME]` of `chorus.toml`: inboxes several agents read as competing consumers (each
//! message goes to one reader), with delivery settings of their own.

use serde::Deserialize;

/// One pool: an inbox read by the agents whose `read` lists it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolEntry {
    /// Unsettled deliveries one stream of the pool holds at once (instead of the server's
    /// `max_in_flight`; a reader's `?max_in_flight=` still wins).
    #[serde(default)]
    pub max_in_flight: Option<usize>,
    /// Seconds a delivery from the pool is held before it is delivered again (instead of the
    /// server's `ack_wait_secs`): the time one worker may take on a message without saying
    /// `in-progress`.
    #[serde(default)]
    pub ack_wait_secs: Option<u64>,
    /// Deliveries of a message in the pool before it becomes a dead letter (instead of the
    /// server's `max_deliver`).
    #[serde(default)]
    pub max_deliver: Option<u32>,
}
