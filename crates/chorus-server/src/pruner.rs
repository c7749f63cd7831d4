//! The background pruner: every interval (jittered), old log entries, dead letters and effect
//! records (journals, delivery histories) from the bus, then blobs no kept message can point
//! at, trace contexts and finished confirmations.

use std::time::Duration;

use chorus_bus::{PruneBefore, now_ms};
use tokio::sync::watch;

use crate::retention::{RetentionConfig, cut};
use crate::state::AppState;

/// What one run of the pruner removed, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Log entries of acknowledged messages.
    pub messages: u64,
    /// Dead letters.
    pub dead_letters: u64,
    /// Images and audio.
    pub blobs: u64,
    /// Trace contexts.
    pub traces: u64,
    /// Rejected and consumed confirmations.
    pub confirmations: u64,
    /// Effect records: journal records, delivery histories, handlers' once-only records.
    pub records: u64,
}

impl PruneReport {
    /// The counts with their metric label.
    fn kinds(&self) -> [(&'static str, u64); 6] {
        [
            ("messages", self.messages),
            ("dead_letters", self.dead_letters),
            ("blobs", self.blobs),
            ("traces", self.traces),
            ("confirmations", self.confirmations),
            ("records", self.records),
        ]
    }
}

/// When blobs are pruned: a blob is kept as long as any message or dead letter that may point
/// at it (its retention is the longest of the three), and while an older message still waits.
fn blob_cut(config: &RetentionConfig, now: i64, oldest_waiting: Option<i64>) -> Option<i64> {
    let spans = [
        config.blobs_secs.unwrap_or(config.messages_secs),
        config.messages_secs,
        config.dead_letters_secs,
    ];
    if spans.contains(&0.0) {
        return None;
    }
    let longest = spans.into_iter().fold(0.0, f64::max);
    earlier(cut(now, longest), oldest_waiting)
}

/// The earlier of a cut and the publish time of the oldest waiting message (what it needs is
/// kept).
fn earlier(cut: Option<i64>, oldest_waiting: Option<i64>) -> Option<i64> {
    match (cut, oldest_waiting) {
        (Some(c), Some(w)) => Some(c.min(w)),
        (c, _) => c,
    }
}

/// How long records are kept: `records_secs`, else as long as messages.
fn records_secs(config: &RetentionConfig) -> f64 {
    config.records_secs.unwrap_or(config.messages_secs)
}

/// Applies `config` once as of `now`: prunes every kind, counts what went in the metrics and
/// logs it. A kind that fails is logged and the others go on.
pub async fn prune_once(app: &AppState, config: &RetentionConfig, now: i64) -> PruneReport {
    let mut report = PruneReport::default();
    // Asked first: records (a handler's once-only mark of a delivery) are kept while an older
    // message waits, as it may be handled again.
    let oldest_waiting = match app.bus.oldest_waiting_ms().await {
        Ok(at) => Some(at),
        Err(e) => {
            tracing::warn!(error = %e, "the store could not tell its oldest waiting message; blobs, trace contexts and records are kept this time");
            None
        }
    };
    let before = PruneBefore {
        messages_ms: cut(now, config.messages_secs),
        dead_letters_ms: cut(now, config.dead_letters_secs),
        effects_ms: oldest_waiting.and_then(|w| earlier(cut(now, records_secs(config)), w)),
    };
    match app.bus.prune(before).await {
        Ok(p) => {
            (report.messages, report.dead_letters, report.records) =
                (p.messages, p.dead_letters, p.effects);
        }
        Err(e) => tracing::warn!(error = %e, "pruning the store failed"),
    }
    // Whatever the retention: a crash during a take-back must not lose a blob.
    if let Err(e) = app.blobs.restore_set_aside().await {
        tracing::warn!(error = %e, "putting back blobs set aside failed");
    }
    if let Some(waiting) = oldest_waiting {
        if let Some(before) = blob_cut(config, now, waiting) {
            match app.blobs.prune(before).await {
                Ok(n) => report.blobs = n,
                Err(e) => tracing::warn!(error = %e, "pruning blobs failed"),
            }
        }
        if let Some(before) = earlier(cut(now, config.traces_secs), waiting) {
            match app.traces.prune(before).await {
                Ok(n) => report.traces = n,
                Err(e) => tracing::warn!(error = %e, "pruning trace contexts failed"),
            }
        }
    }
    if let Some(before) = cut(now, config.confirmations_secs) {
        match app
            .confirmations
            .prune(u64::try_from(before).unwrap_or(0))
            .await
        {
            Ok(n) => report.confirmations = n,
            Err(e) => tracing::warn!(error = %e, "pruning confirmations failed"),
        }
    }
    for (kind, n) in report.kinds() {
        app.metrics.count_pruned(kind, n);
    }
    if report.kinds().iter().any(|(_, n)| *n > 0) {
        tracing::info!(
            messages = report.messages,
            dead_letters = report.dead_letters,
            blobs = report.blobs,
            traces = report.traces,
            confirmations = report.confirmations,
            records = report.records,
            "pruned"
        );
    }
    report
}

/// The background task applying the retention settings.
pub struct Pruner {
    app: AppState,
    config: RetentionConfig,
}

impl Pruner {
    /// A pruner for the server whose state is `app`.
    pub fn new(app: AppState, config: RetentionConfig) -> Pruner {
        Pruner { app, config }
    }

    /// Prunes every interval (jittered, so that servers sharing a store spread their runs)
    /// until `stopping` turns true; a run under way then is dropped at its next wait (each
    /// store change it made is whole).
    pub async fn run(self, mut stopping: watch::Receiver<bool>) {
        loop {
            let wait = jittered(self.config.interval());
            let stop = stopping.wait_for(|s| *s);
            tokio::select! {
                _ = stop => return,
                () = tokio::time::sleep(wait) => {}
            }
            let stop = stopping.wait_for(|s| *s);
            tokio::select! {
                _ = stop => return,
                _ = prune_once(&self.app, &self.config, now_ms()) => {}
            }
        }
    }
}

/// `interval` varied by up to a tenth either way.
fn jittered(interval: Duration) -> Duration {
    // 53 random bits as a fraction in [0, 1).
    let bits = (uuid::Uuid::new_v4().as_u128() >> 75) as u64;
    let r = bits as f64 / (1u64 << 53) as f64;
    interval.mul_f64(0.9 + 0.2 * r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_outlive_what_may_point_at_them() {
        let day = 86_400.0;
        let now = 100 * 86_400_000;
        let config = RetentionConfig::default();
        assert_eq!(
            blob_cut(&config, now, None),
            Some(now - 30 * 86_400_000),
            "as long as dead letters"
        );
        assert_eq!(
            blob_cut(&config, now, Some(5)),
            Some(5),
            "and while an older message waits"
        );
        let longer = RetentionConfig {
            blobs_secs: Some(60.0 * day),
            ..config.clone()
        };
        assert_eq!(blob_cut(&longer, now, None), Some(now - 60 * 86_400_000));
        for forever in [
            RetentionConfig {
                messages_secs: 0.0,
                ..config.clone()
            },
            RetentionConfig {
                blobs_secs: Some(0.0),
                ..config
            },
        ] {
            assert_eq!(blob_cut(&forever, now, None), None);
        }
    }

    #[test]
    fn the_wait_varies_within_a_tenth() {
        let waits: Vec<Duration> = (0..50).map(|_| jittered(Duration::from_secs(60))).collect();
        assert!(
            waits
                .iter()
                .all(|w| *w >= Duration::from_secs(54) && *w <= Duration::from_secs(66)),
            "{waits:?}"
        );
        assert!(waits.iter().any(|w| *w != waits[0]), "not jittered");
    }
}
