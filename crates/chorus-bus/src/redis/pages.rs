//! Paged reads and pruning of the Redis backend.

use redis::AsyncCommands;

use super::{RedisBus, redis_error, scripts};
use crate::config::now_ms;
use crate::delivery::{DeadLetter, LogEntry, Logged, TrackSummary};
use crate::envelope::Envelope;
use crate::error::{BusError, BusResult};
use crate::retention::{PRUNE_BATCH, Page, PruneBefore, Pruned, TrackCursor, number_cursor};
use crate::stored::{DeadInfo, unpack};

/// A dead letter from its stored value (the details as JSON, a newline, the bytes).
pub(super) fn dead_letter(id: &str, value: &[u8]) -> BusResult<DeadLetter> {
    let split = value
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(value.len());
    let info: DeadInfo = serde_json::from_slice(&value[..split])
        .map_err(|e| BusError::Corrupt(format!("a dead letter does not parse: {e}")))?;
    let bytes = value.get(split + 1..).unwrap_or_default().to_vec();
    Ok(DeadLetter {
        id: id.to_owned(),
        message_id: info.message_id,
        queue: info.queue,
        reason: info.reason,
        envelope: info.envelope.map(|e| Envelope {
            bytes: bytes.clone().into(),
            ..e
        }),
        bytes,
        at_ms: info.at_ms,
    })
}

/// Entries of a numbered list: the number of the first, and the entries.
struct Numbered {
    first: u64,
    kept: u64,
    entries: Vec<Envelope>,
    /// The entries' publish times (empty for correlations).
    times: Vec<i64>,
}

impl RedisBus {
    fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.ns)
    }

    /// Indexes dead letters recorded before the id index existed (once: then the counts agree).
    async fn index_old_dead_letters(&self) -> BusResult<u64> {
        let mut con = self.con();
        let (letters, indexed): (u64, u64) = redis::pipe()
            .hlen(self.key("dead"))
            .zcard(self.key("dead:ids"))
            .query_async(&mut con)
            .await
            .map_err(redis_error)?;
        if letters == indexed {
            return Ok(letters);
        }
        let _: i64 = scripts::index_dead()
            .arg(&self.ns)
            .arg(now_ms())
            .invoke_async(&mut con)
            .await
            .map_err(redis_error)?;
        Ok(letters)
    }

    /// Up to `limit` dead letters after id `after`, oldest first.
    pub(super) async fn dead_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        let after = number_cursor(after)?;
        let total = self.index_old_dead_letters().await?;
        let mut con = self.con();
        let members: Vec<String> = con
            .zrangebyscore_limit(
                self.key("dead:ids"),
                format!("({after}"),
                "+inf",
                0,
                isize::try_from(limit.saturating_add(1)).unwrap_or(isize::MAX),
            )
            .await
            .map_err(redis_error)?;
        let ids: Vec<&str> = members
            .iter()
            .map(|m| m.split_once(':').map_or(m.as_str(), |(id, _)| id))
            .collect();
        if ids.is_empty() {
            return Ok(Page::cut(
                Vec::new(),
                limit,
                Some(total),
                |_: &DeadLetter| String::new(),
            ));
        }
        let values: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
            .arg(self.key("dead"))
            .arg(&ids)
            .query_async(&mut con)
            .await
            .map_err(redis_error)?;
        let mut items = Vec::with_capacity(ids.len());
        // A letter removed between the two reads is left out.
        for (id, value) in ids.iter().zip(values) {
            if let Some(value) = value {
                items.push(dead_letter(id, &value)?);
            }
        }
        Ok(Page::cut(items, limit, Some(total), |d| d.id.clone()))
    }

    /// The entries of list `kind`:`id` numbered after `after`, at most `limit`.
    async fn numbered(
        &self,
        kind: &str,
        id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Numbered> {
        let (first, kept, values, times): (u64, u64, Vec<Vec<u8>>, Vec<i64>) = scripts::read_log()
            .arg(&self.ns)
            .arg(kind)
            .arg(id)
            .arg(after)
            .arg(limit)
            .invoke_async(&mut self.con())
            .await
            .map_err(redis_error)?;
        let entries = values.iter().map(|v| unpack(v)).collect::<BusResult<_>>()?;
        Ok(Numbered {
            first,
            kept,
            entries,
            times,
        })
    }

    /// Up to `limit` messages of a task after entry number `after`.
    pub(super) async fn task_page(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>> {
        let after = number_cursor(after)?;
        let read = self
            .numbered("task", task_id, after, limit.saturating_add(1))
            .await?;
        if read.times.len() != read.entries.len() {
            return Err(BusError::Corrupt(format!(
                "task {task_id:?}: {} entries read with {} publish times",
                read.entries.len(),
                read.times.len()
            )));
        }
        let logged = read
            .entries
            .into_iter()
            .zip(read.times)
            .map(|(envelope, published_ms)| Logged {
                envelope,
                published_ms,
            });
        let items: Vec<(u64, Logged)> = (read.first..).zip(logged).collect();
        Ok(Page::cut_numbered(items, limit, read.kept))
    }

    /// The message stored under `id` within the dedupe window, with its publish time.
    pub(super) async fn located(&self, id: &str) -> BusResult<Option<Logged>> {
        let value: Option<Vec<u8>> = self
            .con()
            .get(self.key(&format!("msg:{id}")))
            .await
            .map_err(redis_error)?;
        let Some(value) = value else {
            return Ok(None);
        };
        let corrupt = || BusError::Corrupt(format!("the kept message of id {id:?} does not parse"));
        let colon = value.iter().position(|&b| b == b':').ok_or_else(corrupt)?;
        let published_ms = std::str::from_utf8(&value[..colon])
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(corrupt)?;
        Ok(Some(Logged {
            envelope: unpack(&value[colon + 1..])?,
            published_ms,
        }))
    }

    /// The conversation's entries after sequence number `after`.
    pub(super) async fn conversation_entries(
        &self,
        conversation_id: &str,
        after: u64,
        limit: usize,
    ) -> BusResult<Vec<LogEntry>> {
        let read = self.numbered("conv", conversation_id, after, limit).await?;
        Ok((read.first..)
            .zip(read.entries)
            .map(|(seq, envelope)| LogEntry { seq, envelope })
            .collect())
    }

    /// Up to `limit` tasks (`kind` "task") or conversations ("conv"), latest activity first,
    /// after cursor `after`.
    pub(super) async fn tracks(
        &self,
        kind: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<TrackSummary>> {
        let cursor = TrackCursor::parse(after)?;
        let recent = self.key(&format!("recent:{kind}"));
        let mut con = self.con();
        let total: u64 = con.zcard(&recent).await.map_err(redis_error)?;
        let max = cursor
            .as_ref()
            .map_or_else(|| "+inf".to_owned(), |c| c.last_ms.to_string());
        let want = limit.saturating_add(1);
        let mut latest: Vec<(String, i64)> = Vec::new();
        let mut offset = 0;
        // Entries of the cursor's time up to the cursor's id are read and skipped.
        while latest.len() < want {
            let batch: Vec<(String, f64)> = con
                .zrevrangebyscore_limit_withscores(
                    &recent,
                    &max,
                    "-inf",
                    offset,
                    PRUNE_BATCH as isize,
                )
                .await
                .map_err(redis_error)?;
            offset += batch.len() as isize;
            let done = batch.len() < PRUNE_BATCH;
            for (id, score) in batch {
                // Scores are whole milliseconds, exact in an f64.
                let probe = TrackSummary {
                    id,
                    messages: 0,
                    first_ms: 0,
                    last_ms: score as i64,
                };
                if cursor.as_ref().is_none_or(|c| c.before(&probe)) && latest.len() < want {
                    latest.push((probe.id, probe.last_ms));
                }
            }
            if done {
                break;
            }
        }
        let mut items = Vec::with_capacity(latest.len());
        if !latest.is_empty() {
            let mut pipe = redis::pipe();
            for (id, _) in &latest {
                pipe.hget(self.key(&format!("first:{kind}")), id)
                    .llen(self.key(&format!("{kind}:{id}")));
            }
            let counts: Vec<(Option<i64>, u64)> =
                pipe.query_async(&mut con).await.map_err(redis_error)?;
            for ((id, last_ms), (first, messages)) in latest.into_iter().zip(counts) {
                items.push(TrackSummary {
                    id,
                    messages,
                    first_ms: first.unwrap_or(last_ms),
                    last_ms,
                });
            }
        }
        Ok(Page::cut(items, limit, Some(total), TrackCursor::of))
    }

    /// Prunes the logs and the dead letters, a batch per script run.
    pub(super) async fn prune_now(&self, before: PruneBefore) -> BusResult<Pruned> {
        let now = now_ms();
        let mut pruned = Pruned::default();
        if let Some(cut) = before.messages_cut(&self.config, now) {
            pruned.messages = self.prune_batches(scripts::prune_log, cut).await?;
        }
        if let Some(cut) = before.dead_letters_cut(now) {
            self.index_old_dead_letters().await?;
            pruned.dead_letters = self.prune_batches(scripts::prune_dead, cut).await?;
        }
        if let Some(cut) = before.effects_cut(now) {
            pruned.effects = self.prune_batches(scripts::prune_effects, cut).await?;
        }
        Ok(pruned)
    }

    /// Runs a pruning script until a run removes less than a full batch.
    async fn prune_batches(
        &self,
        script: fn() -> redis::ScriptInvocation<'static>,
        cut: i64,
    ) -> BusResult<u64> {
        let mut total = 0;
        loop {
            let n: u64 = script()
                .arg(&self.ns)
                .arg(cut)
                .arg(PRUNE_BATCH)
                .invoke_async(&mut self.con())
                .await
                .map_err(redis_error)?;
            total += n;
            if n < PRUNE_BATCH as u64 {
                return Ok(total);
            }
        }
    }

    /// When the oldest entry still in a queue stream was added (acknowledged entries are
    /// deleted: what is left waits).
    pub(super) async fn oldest_waiting(&self) -> BusResult<Option<i64>> {
        let mut con = self.con();
        let mut streams: Vec<String> = Vec::new();
        let mut scan = 0u64;
        loop {
            // A key may come twice; that changes no minimum.
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(scan)
                .arg("MATCH")
                .arg(self.key("q:*"))
                .arg("COUNT")
                .arg(PRUNE_BATCH)
                .query_async(&mut con)
                .await
                .map_err(redis_error)?;
            streams.extend(keys);
            if next == 0 {
                break;
            }
            scan = next;
        }
        let mut oldest: Option<i64> = None;
        for key in streams {
            let first: redis::streams::StreamRangeReply = con
                .xrange_count(&key, "-", "+", 1)
                .await
                .map_err(redis_error)?;
            let at = first
                .ids
                .first()
                .and_then(|e| e.id.split_once('-'))
                .and_then(|(ms, _)| ms.parse::<i64>().ok());
            if let Some(at) = at {
                oldest = Some(oldest.map_or(at, |o| o.min(at)));
            }
        }
        Ok(oldest)
    }
}
