//! Pruning and paging of the in-memory backend.

use std::collections::VecDeque;

use super::{Dead, FastMap, HandledIds, Log, MemoryBus, Track, lock};
use crate::delivery::{DeadLetter, Logged, TrackSummary};
use crate::envelope::Envelope;
use crate::error::BusResult;
use crate::retention::{Page, PruneBefore, Pruned, number_cursor};

/// The summaries of every key of a tracking index.
pub(super) fn summaries(index: &FastMap<String, Track>) -> Vec<TrackSummary> {
    index.iter().map(|(id, t)| t.summary(id)).collect()
}

/// A dead letter's id as the number it is (ids are counted from 1 on this backend).
fn number(d: &DeadLetter) -> u64 {
    d.id.parse().unwrap_or(0)
}

impl MemoryBus {
    /// Up to `limit` dead letters after the one with id `after`.
    pub(super) fn dead_page(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<DeadLetter>> {
        let after = number_cursor(after)?;
        let dead = lock(&self.dead);
        let start = dead.letters.partition_point(|(_, d)| number(d) <= after);
        let items = dead
            .letters
            .range(start..)
            .take(limit.saturating_add(1))
            .map(|(_, d)| d.clone())
            .collect();
        let total = dead.letters.len() as u64;
        Ok(Page::cut(items, limit, Some(total), |d| d.id.clone()))
    }

    /// Up to `limit` messages of a task after cursor `after`: one more than the log position
    /// of the last message read (positions count from 0).
    pub(super) fn task_page(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> BusResult<Page<Logged>> {
        let after = number_cursor(after)?;
        let log = lock(&self.log);
        let Some(track) = log.by_task.get(task_id) else {
            return Ok(Page {
                items: Vec::new(),
                next: None,
                total: Some(0),
            });
        };
        let start = track
            .at
            .partition_point(|&at| u64::try_from(at).unwrap_or(u64::MAX) < after);
        // Numbered by the cursor that continues after each: its log position plus one.
        let items: Vec<(u64, Logged)> = track
            .at
            .range(start..)
            .take(limit.saturating_add(1))
            .map(|&at| {
                let (published_ms, env) = log.entry(at);
                let logged = Logged {
                    envelope: (**env).clone(),
                    published_ms: *published_ms,
                };
                (at as u64 + 1, logged)
            })
            .collect();
        Ok(Page::cut_numbered(items, limit, track.at.len() as u64))
    }

    /// Prunes the log and the dead letters as of `now`.
    pub(super) fn prune_now(&self, before: PruneBefore, now: i64) -> Pruned {
        let mut pruned = Pruned::default();
        if let Some(cut) = before.messages_cut(&self.config, now) {
            pruned.messages = lock(&self.log).prune(cut);
        }
        if let Some(cut) = before.dead_letters_cut(now) {
            pruned.dead_letters = lock(&self.dead).prune(cut);
        }
        if let Some(cut) = before.effects_cut(now) {
            pruned.effects = lock(&self.handled).prune(cut);
        }
        pruned
    }

    /// The publish time of the oldest message still held by a queue.
    pub(super) fn oldest_waiting(&self) -> Option<i64> {
        let cells: Vec<_> = self
            .queues
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        cells
            .iter()
            .filter_map(|cell| {
                let q = lock(&cell.state);
                let ready = q.ready.iter().flatten().map(|e| e.at);
                let delayed = q.delayed.iter().map(|(_, e)| e.at);
                let held = q.held.values().map(|h| h.entry.at);
                ready.chain(delayed).chain(held).min()
            })
            .min()
    }
}

impl Log {
    /// Drops the logged messages published before `cut` from the log and from their tracking
    /// indexes; returns how many. The queues hold their own references: a message still
    /// waiting is delivered all the same.
    fn prune(&mut self, cut: i64) -> u64 {
        let Log {
            log,
            base,
            by_task,
            by_correlation,
            by_conversation,
            ..
        } = self;
        let mut removed = 0;
        while log.front().is_some_and(|(at, _)| *at < cut) {
            let Some((_, env)) = log.pop_front() else {
                break;
            };
            let position = *base;
            *base += 1;
            removed += 1;
            for (key, index) in [
                (&env.task_id, &mut *by_task),
                (&env.correlation_id, &mut *by_correlation),
                (&env.conversation_id, &mut *by_conversation),
            ] {
                if let Some(k) = key {
                    drop_first(index, k, position, log, *base);
                }
            }
        }
        removed
    }
}

/// Drops log position `position` from the front of `key`'s track; a track left empty is
/// removed (a conversation used again later starts over at 1).
fn drop_first(
    index: &mut FastMap<String, Track>,
    key: &str,
    position: usize,
    log: &VecDeque<(i64, std::sync::Arc<Envelope>)>,
    base: usize,
) {
    let Some(track) = index.get_mut(key) else {
        return;
    };
    if track.at.front() == Some(&position) {
        track.at.pop_front();
        track.pruned += 1;
    }
    match track.at.front() {
        Some(&next) => track.first_ms = log[next - base].0,
        None => {
            index.remove(key);
        }
    }
}

impl Dead {
    /// Drops the dead letters recorded before `cut`; returns how many.
    fn prune(&mut self, cut: i64) -> u64 {
        let before = self.letters.len();
        while self.letters.front().is_some_and(|(at, _)| *at < cut) {
            self.letters.pop_front();
        }
        (before - self.letters.len()) as u64
    }
}

impl HandledIds {
    /// Drops the effect records written before `cut`, with their handled marks; returns how
    /// many.
    fn prune(&mut self, cut: i64) -> u64 {
        let mut n = 0;
        while let Some((_, effect)) = self.effects.front().filter(|(at, _)| *at < cut) {
            let key = (effect.handler.clone(), effect.message_id.clone());
            self.ids.remove(&key);
            self.effects.pop_front();
            n += 1;
        }
        n
    }
}
