//! Pruning of the NATS backend.
//!
//! The queue stream is never given a `max_age`: JetStream would drop a message no consumer has
//! acknowledged yet. The log and the dead letters are separate streams (a queue holds its own
//! copy of each message), so they are purged below the first message at or after the cut, by
//! stream sequence; a `max_age` on them would renumber the conversations behind their readers'
//! backs. Before the log is purged, each conversation losing entries gets a marker (see
//! [`super::pages::Marker`]) so that its sequence numbers go on.

use std::collections::HashMap;

use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::context::{Publish, PublishErrorKind};

use super::NatsBus;
use super::pages::Marker;
use super::wire::nats_error;
use crate::config::now_ms;
use crate::error::BusResult;
use crate::retention::{PRUNE_BATCH, PruneBefore, Pruned};

impl NatsBus {
    /// Prunes the log, the dead letters and the effect records.
    pub(super) async fn prune_now(&self, before: PruneBefore) -> BusResult<Pruned> {
        let now = now_ms();
        let mut pruned = Pruned::default();
        if let Some(cut) = before.messages_cut(&self.config, now) {
            pruned.messages = self.prune_log(cut).await?;
        }
        if let Some(cut) = before.dead_letters_cut(now) {
            let stream = format!("{}_DLQ", self.ns);
            // The whole stream: dead letters are under one subject per message id.
            let until = self.first_since(&stream, String::new(), cut).await?;
            pruned.dead_letters = self.purge(&stream, None, until).await?;
        }
        if let Some(cut) = before.effects_cut(now) {
            // Effects are written in time order and each is its handled mark: purging the
            // oldest frees their keys too.
            let stream = format!("{}_DONE", self.ns);
            let effects = format!("{}.done.>", self.ns);
            let until = self.first_since(&stream, effects.clone(), cut).await?;
            pruned.effects = self.purge(&stream, Some(effects), until).await?;
        }
        Ok(pruned)
    }

    /// The stream sequence of the first message of `stream` on `filter` (all when empty) published at or after
    /// `cut`; when none is, the sequence after the last one (read before looking, so that a
    /// message published meanwhile is after it).
    async fn first_since(&self, stream: &str, filter: String, cut: i64) -> BusResult<u64> {
        let info = self.js.get_stream(stream).await.map_err(nats_error)?;
        let end = info.cached_info().state.last_sequence.saturating_add(1);
        let start_time =
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(cut) * 1_000_000)
                .map_err(|e| nats_error(format!("a prune cut of {cut} ms: {e}")))?;
        let first = self
            .read_from(
                stream,
                filter,
                DeliverPolicy::ByStartTime { start_time },
                1,
                true,
            )
            .await?;
        match first.first() {
            Some(m) => Ok(m.info().map_err(nats_error)?.stream_sequence.min(end)),
            None => Ok(end),
        }
    }

    /// Purges the messages of `stream` (on `filter`, when given) before stream sequence `until`.
    async fn purge(&self, stream: &str, filter: Option<String>, until: u64) -> BusResult<u64> {
        let stream = self.js.get_stream(stream).await.map_err(nats_error)?;
        let purge = stream.purge().sequence(until);
        let done = match filter {
            Some(filter) => purge.filter(filter).await,
            None => purge.await,
        }
        .map_err(nats_error)?;
        Ok(done.purged)
    }

    /// Purges the log entries published before `cut`, a batch at a time, marking each
    /// conversation that loses entries first. Stops early (having purged what it marked) when
    /// another process marks a conversation at the same time: that one carries on.
    async fn prune_log(&self, cut: i64) -> BusResult<u64> {
        let stream = format!("{}_LOG", self.ns);
        let entries = format!("{}.log.*.*.*", self.ns);
        let until = self.first_since(&stream, entries.clone(), cut).await?;
        let mut pruned = 0;
        loop {
            let old = self
                .read_from(
                    &stream,
                    entries.clone(),
                    DeliverPolicy::All,
                    PRUNE_BATCH + 1,
                    true,
                )
                .await?;
            let first = match old.first() {
                Some(m) => m.info().map_err(nats_error)?.stream_sequence,
                None => until,
            };
            if first >= until {
                return Ok(pruned);
            }
            let mut batch_end = until;
            let mut lost: HashMap<String, u64> = HashMap::new();
            let mut markers: HashMap<String, (Marker, u64)> = HashMap::new();
            for (i, m) in old.iter().enumerate() {
                let seq = m.info().map_err(nats_error)?.stream_sequence;
                if seq >= until || i == PRUNE_BATCH {
                    batch_end = seq.min(until);
                    break;
                }
                let conv = m.subject.rsplit('.').next().unwrap_or("_");
                if conv == "_" {
                    continue;
                }
                if !markers.contains_key(conv) {
                    markers.insert(conv.to_owned(), self.marker(conv).await?);
                }
                // Entries before the marker's cut were counted by an earlier prune.
                if markers.get(conv).is_some_and(|(mk, _)| seq >= mk.cut) {
                    *lost.entry(conv.to_owned()).or_default() += 1;
                }
            }
            for (conv, n) in &lost {
                let (marker, at) = markers[conv];
                let next = Marker {
                    cut: batch_end,
                    base: marker.base + n,
                };
                if !self.set_marker(conv, next, at).await? {
                    return Ok(pruned);
                }
            }
            pruned += self
                .purge(&stream, Some(entries.clone()), batch_end)
                .await?;
            for conv in lost.keys() {
                self.tidy_marker(conv).await?;
            }
            if batch_end >= until {
                return Ok(pruned);
            }
        }
    }

    /// Writes conversation `conv`'s marker over the one at stream sequence `at` (0: none);
    /// false when another marker was written since.
    async fn set_marker(&self, conv: &str, marker: Marker, at: u64) -> BusResult<bool> {
        let payload = serde_json::to_vec(&marker).map_err(nats_error)?;
        let publish = Publish::build()
            .payload(payload.into())
            .expected_last_subject_sequence(at);
        let sent = self
            .js
            .send_publish(self.marker_subject(conv), publish)
            .await
            .map_err(nats_error)?
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => Ok(false),
            Err(e) => Err(nats_error(e)),
        }
    }

    /// Keeps only conversation `conv`'s latest marker, or none once nothing of it is left (a
    /// conversation used again later starts over at 1).
    async fn tidy_marker(&self, conv: &str) -> BusResult<()> {
        let left = self
            .log_count(format!("{}.log.*.*.{conv}", self.ns))
            .await?;
        let purge = self.log.purge().filter(self.marker_subject(conv));
        let done = if left == 0 {
            purge.await
        } else {
            purge.keep(1).await
        };
        done.map(drop).map_err(nats_error)
    }
}
