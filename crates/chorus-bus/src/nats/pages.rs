//! Paged reads of the NATS backend, and the markers that keep a pruned conversation's
//! numbering: `ns.log.base.<conversation>` holds `{cut, base}`, meaning that the conversation's
//! entries before stream sequence `cut` are pruned (or about to be), and were `base` many.

use async_nats::jetstream;
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::wire::{envelope_from, hex, nats_error};
use super::{NatsBus, dead_from, ms};
use crate::delivery::{DeadLetter, LogEntry, Logged};
use crate::envelope::Envelope;
use crate::error::{BusError, BusResult};
use crate::retention::{Page, number_cursor};

/// Where a conversation's numbering goes on after a prune.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Marker {
    /// Entries before this stream sequence no longer count as kept.
    pub cut: u64,
    /// How many entries before `cut` there were.
    pub base: u64,
}

impl NatsBus {
    /// The subject of conversation token `conv`'s marker.
    pub(super) fn marker_subject(&self, conv: &str) -> String {
        format!("{}.log.base.{conv}", self.ns)
    }

    /// The marker of conversation token `conv` and its stream sequence (0 when none).
    pub(super) async fn marker(&self, conv: &str) -> BusResult<(Marker, u64)> {
        match self
            .log
            .get_last_raw_message_by_subject(&self.marker_subject(conv))
            .await
        {
            Ok(m) => {
                let marker = serde_json::from_slice(&m.payload).map_err(|e| {
                    BusError::Corrupt(format!(
                        "conversation marker {} does not parse: {e}",
                        m.subject
                    ))
                })?;
                Ok((marker, m.sequence))
            }
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => {
                Ok((Marker::default(), 0))
            }
            Err(e) => Err(nats_error(e)),
        }
    }

    /// How many messages of the log are on subjects matching `filter`.
    pub(super) async fn log_count(&self, filter: String) -> BusResult<u64> {
        let mut subjects = self
            .log
            .info_with_subjects(filter)
            .await
            .map_err(nats_error)?;
        let mut total = 0u64;
        while let Some(subject) = subjects.next().await {
            total += subject.map_err(nats_error)?.1 as u64;
        }
        Ok(total)
    }

    /// Up to `limit` dead letters after id (stream sequence) `after`.
    pub(super) async fn dead_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        let start_sequence = number_cursor(after)?.saturating_add(1);
        let read = self
            .read_from(
                &format!("{}_DLQ", self.ns),
                String::new(),
                DeliverPolicy::ByStartSequence { start_sequence },
                limit.saturating_add(1),
                false,
            )
            .await?;
        let mut items = Vec::with_capacity(read.len());
        for m in &read {
            let seq = m.info().map_err(nats_error)?.stream_sequence;
            items.push(dead_from(seq, m.headers.as_ref(), &m.payload)?);
        }
        let total = crate::backend::Backend::dead_letter_count(self).await?;
        Ok(Page::cut(items, limit, Some(total), |d| d.id.clone()))
    }

    /// The dead letter whose id is stream sequence `id`.
    pub(super) async fn find_dead(&self, id: &str) -> BusResult<Option<DeadLetter>> {
        let Ok(seq) = id.parse::<u64>() else {
            return Ok(None);
        };
        match self.raw_message("DLQ", seq).await? {
            Some(m) => dead_from(m.sequence, Some(&m.headers), &m.payload).map(Some),
            None => Ok(None),
        }
    }

    /// The message at stream sequence `seq` of this bus's stream `name` (`LOG`, `DLQ`), if
    /// the stream still holds it.
    async fn raw_message(&self, name: &str, seq: u64) -> BusResult<Option<StreamMessage>> {
        let stream = self
            .js
            .get_stream(format!("{}_{name}", self.ns))
            .await
            .map_err(nats_error)?;
        match stream.get_raw_message(seq).await {
            Ok(m) => Ok(Some(m)),
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok(None),
            Err(e) => Err(nats_error(e)),
        }
    }

    /// Up to `limit` messages of a task after stream sequence `after`.
    pub(super) async fn task_page(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>> {
        let start_sequence = number_cursor(after)?.saturating_add(1);
        let filter = format!("{}.log.{}.*.*", self.ns, hex(task_id));
        let read = self
            .read_from(
                &format!("{}_LOG", self.ns),
                filter.clone(),
                DeliverPolicy::ByStartSequence { start_sequence },
                limit.saturating_add(1),
                false,
            )
            .await?;
        let items = read
            .iter()
            .map(|m| {
                let info = m.info().map_err(nats_error)?;
                let envelope = envelope_from(m.headers.as_ref(), &m.payload)?;
                let published_ms = ms(info.published);
                Ok((
                    info.stream_sequence,
                    Logged {
                        envelope,
                        published_ms,
                    },
                ))
            })
            .collect::<BusResult<Vec<_>>>()?;
        let total = self.log_count(filter).await?;
        Ok(Page::cut_numbered(items, limit, total))
    }

    /// The log entry at stream sequence `seq`, if the log still holds it.
    pub(super) async fn logged_at(&self, seq: u64) -> BusResult<Option<Logged>> {
        let Some(m) = self.raw_message("LOG", seq).await? else {
            return Ok(None);
        };
        Ok(Some(Logged {
            envelope: envelope_from(Some(&m.headers), &m.payload)?,
            published_ms: ms(m.time),
        }))
    }

    /// The conversation's entries after sequence number `after`: its kept entries numbered on
    /// from its marker.
    pub(super) async fn conversation_entries(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>> {
        let conv = hex(conversation_id);
        let (marker, _) = self.marker(&conv).await?;
        let read = self
            .read_with(
                &format!("{}_LOG", self.ns),
                format!("{}.log.*.*.{conv}", self.ns),
                false,
            )
            .await?;
        Ok(numbered(&read)?
            .into_iter()
            .filter(|(seq, _)| *seq >= marker.cut)
            .zip(marker.base + 1..)
            .skip_while(|(_, seq)| *seq <= after)
            .take(limit)
            .map(|((_, envelope), seq)| LogEntry { seq, envelope })
            .collect())
    }
}

/// The envelopes of log messages with their stream sequences.
fn numbered(read: &[jetstream::Message]) -> BusResult<Vec<(u64, Envelope)>> {
    read.iter()
        .map(|m| {
            let seq = m.info().map_err(nats_error)?.stream_sequence;
            Ok((seq, envelope_from(m.headers.as_ref(), &m.payload)?))
        })
        .collect()
}
