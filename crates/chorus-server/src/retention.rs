//! Retention: the `[retention]` table of the config (how long what the server stores is kept);
//! the pruner (`crate::pruner`) applies it.

use std::time::Duration;

use serde::Deserialize;

const DAY: f64 = 24.0 * 3600.0;

/// The `[retention]` table; every duration is in seconds (fractions allowed) and 0 keeps that
/// kind forever.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionConfig {
    /// Acknowledged messages in the logs (task, correlation and conversation timelines); a
    /// message still waiting in an inbox is never pruned. Default 7 days.
    #[serde(default = "default_messages_secs")]
    pub messages_secs: f64,
    /// Dead letters. Default 30 days.
    #[serde(default = "default_dead_letters_secs")]
    pub dead_letters_secs: f64,
    /// Images and audio kept by the server, after the last message that carried them; a blob
    /// is also kept as long as a message or dead letter that may point at it. Default: as
    /// long as those.
    #[serde(default)]
    pub blobs_secs: Option<f64>,
    /// Trace contexts kept beside the messages (and kept while their message waits). Default
    /// 1 day.
    #[serde(default = "default_traces_secs")]
    pub traces_secs: f64,
    /// Rejected and consumed confirmations, after their creation (pending and approved ones
    /// are kept). Default 7 days.
    #[serde(default = "default_confirmations_secs")]
    pub confirmations_secs: f64,
    /// Agents' journal records, delivery histories and handlers' once-only records (the
    /// store's effect records), after they were written; kept while an older message still
    /// waits in an inbox. Default: as long as acknowledged messages (`messages_secs`), whose
    /// histories they hold.
    #[serde(default)]
    pub records_secs: Option<f64>,
    /// How often the pruner runs (each wait varies by up to a tenth either way). Default 60.
    #[serde(default = "default_interval_secs")]
    pub interval_secs: f64,
}

fn default_messages_secs() -> f64 {
    7.0 * DAY
}

fn default_dead_letters_secs() -> f64 {
    30.0 * DAY
}

fn default_traces_secs() -> f64 {
    DAY
}

fn default_confirmations_secs() -> f64 {
    7.0 * DAY
}

fn default_interval_secs() -> f64 {
    60.0
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            messages_secs: default_messages_secs(),
            dead_letters_secs: default_dead_letters_secs(),
            blobs_secs: None,
            traces_secs: default_traces_secs(),
            confirmations_secs: default_confirmations_secs(),
            records_secs: None,
            interval_secs: default_interval_secs(),
        }
    }
}

/// The longest retention accepted: 100 years (a larger value is surely a unit mistake).
const MAX_SECS: f64 = 100.0 * 365.0 * DAY;

impl RetentionConfig {
    /// How long an acknowledged message is kept in the logs; "forever" (0) is [`MAX_SECS`].
    pub fn messages_kept(&self) -> Duration {
        let secs = if self.messages_secs > 0.0 {
            self.messages_secs.min(MAX_SECS)
        } else {
            MAX_SECS
        };
        Duration::from_secs_f64(secs)
    }

    /// Why the table cannot be used, naming the key (`retention.<key>`), if it cannot.
    pub fn problem(&self) -> Option<String> {
        let kept = [
            ("messages_secs", Some(self.messages_secs)),
            ("dead_letters_secs", Some(self.dead_letters_secs)),
            ("blobs_secs", self.blobs_secs),
            ("traces_secs", Some(self.traces_secs)),
            ("confirmations_secs", Some(self.confirmations_secs)),
            ("records_secs", self.records_secs),
        ];
        for (key, value) in kept {
            if let Some(v) = value
                && !(v.is_finite() && (0.0..=MAX_SECS).contains(&v))
            {
                return Some(format!(
                    "retention.{key}: expected a number of seconds from 0 (keep forever) to {MAX_SECS}, found {v} (hint: 604800 is 7 days)"
                ));
            }
        }
        let i = self.interval_secs;
        if !(i.is_finite() && (0.01..=DAY).contains(&i)) {
            return Some(format!(
                "retention.interval_secs: expected a number of seconds from 0.01 to {DAY}, found {i}"
            ));
        }
        None
    }

    /// How long between two runs of the pruner, before jitter.
    pub fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.interval_secs)
    }
}

/// A retention in seconds as how far back from `now_ms` things are kept: the time before which
/// they are pruned, or `None` to keep them forever.
pub(crate) fn cut(now_ms: i64, secs: f64) -> Option<i64> {
    (secs > 0.0).then(|| now_ms.saturating_sub((secs * 1000.0).round() as i64))
}
