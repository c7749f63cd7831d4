//! Retention and paging: what a prune removes, what it reports, and pages of listings with the
//! cursor that continues them.

use crate::config::{BusConfig, millis};
use crate::delivery::TrackSummary;
use crate::error::{BusError, BusResult};

/// What [`crate::Bus::prune`] removes: entries older than these times (Unix milliseconds);
/// `None` keeps that kind forever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneBefore {
    /// Log entries (task, correlation and conversation logs, and the stored copies of
    /// acknowledged messages) published before this time.
    pub messages_ms: Option<i64>,
    /// Dead letters recorded before this time.
    pub dead_letters_ms: Option<i64>,
    /// Effect records (`commit_once`: agents' journals, delivery histories, the once-only
    /// records of handlers) written before this time, with the handled mark that kept their
    /// key from being written again.
    pub effects_ms: Option<i64>,
}

/// What one prune removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Stored messages (log entries) removed.
    pub messages: u64,
    /// Dead letters removed.
    pub dead_letters: u64,
    /// Effect records removed.
    pub effects: u64,
}

impl PruneBefore {
    /// The time before which messages are pruned, never inside the dedupe window (a message
    /// id published again within the window must still be found) and never in the future.
    pub(crate) fn messages_cut(&self, config: &BusConfig, now: i64) -> Option<i64> {
        let latest = now.saturating_sub(millis(config.dedupe_window));
        self.messages_ms.map(|cut| cut.min(latest))
    }

    /// The time before which dead letters are pruned, never in the future.
    pub(crate) fn dead_letters_cut(&self, now: i64) -> Option<i64> {
        self.dead_letters_ms.map(|cut| cut.min(now))
    }

    /// The time before which effect records are pruned, never in the future.
    pub(crate) fn effects_cut(&self, now: i64) -> Option<i64> {
        self.effects_ms.map(|cut| cut.min(now))
    }
}

/// Removals done in bounded batches, so that a large prune never holds a store for long.
pub(crate) const PRUNE_BATCH: usize = 200;

/// One page of a listing, and where the next one starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The entries, in the listing's order.
    pub items: Vec<T>,
    /// The cursor to pass as `after` for the next page; `None` on the last page.
    pub next: Option<String>,
    /// How many entries the whole listing has, when the store counts them cheaply.
    pub total: Option<u64>,
}

impl<T> Page<T> {
    /// A page of `items` out of a listing of `total`: when more than `limit` were read, the
    /// extra one is dropped and `cursor` of the last kept one continues the listing.
    pub(crate) fn cut(
        mut items: Vec<T>,
        limit: usize,
        total: Option<u64>,
        cursor: impl Fn(&T) -> String,
    ) -> Page<T> {
        let more = items.len() > limit;
        items.truncate(limit);
        let next = if more { items.last().map(cursor) } else { None };
        Page { items, next, total }
    }

    /// [`Page::cut`] of items numbered by their cursor (a sequence number): the numbers continue
    /// the listing and are dropped from the page.
    pub(crate) fn cut_numbered<N: ToString>(
        items: Vec<(N, T)>,
        limit: usize,
        total: u64,
    ) -> Page<T> {
        let page = Page::cut(items, limit, Some(total), |(n, _)| n.to_string());
        Page {
            items: page.items.into_iter().map(|(_, item)| item).collect(),
            next: page.next,
            total: page.total,
        }
    }
}

/// The error for a cursor this store did not hand out.
pub(crate) fn bad_cursor(cursor: &str, expected: &str) -> BusError {
    BusError::Config {
        what: "cursor".into(),
        detail: format!(
            "{cursor:?} is not a cursor of this listing (expected {expected}: pass the `next` of the page before, unchanged)"
        ),
    }
}

/// A numeric cursor (a dead letter id, a stream or row sequence).
pub(crate) fn number_cursor(after: Option<&str>) -> BusResult<u64> {
    match after {
        None => Ok(0),
        Some(s) => s
            .parse()
            .map_err(|_| bad_cursor(s, "a number from an earlier page")),
    }
}

/// Where a listing of tasks or conversations (latest activity first, then id, descending)
/// continues: after the entry with this activity time and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrackCursor {
    pub last_ms: i64,
    pub id: String,
}

impl TrackCursor {
    /// Reads `"<last_ms>:<id>"`.
    pub(crate) fn parse(after: Option<&str>) -> BusResult<Option<TrackCursor>> {
        let Some(s) = after else { return Ok(None) };
        let (ms, id) = s
            .split_once(':')
            .ok_or_else(|| bad_cursor(s, "<time>:<id>"))?;
        let last_ms = ms.parse().map_err(|_| bad_cursor(s, "<time>:<id>"))?;
        Ok(Some(TrackCursor {
            last_ms,
            id: id.to_owned(),
        }))
    }

    /// The cursor continuing after `t`.
    pub(crate) fn of(t: &TrackSummary) -> String {
        format!("{}:{}", t.last_ms, t.id)
    }

    /// True when `t` comes after the cursor in the listing's order.
    pub(crate) fn before(&self, t: &TrackSummary) -> bool {
        (t.last_ms, t.id.as_str()) < (self.last_ms, self.id.as_str())
    }
}

/// A page of a listing of tasks or conversations read whole: sorted by latest activity, then
/// id (both descending), continued after `after`.
pub(crate) fn track_page(
    mut all: Vec<TrackSummary>,
    after: Option<&str>,
    limit: usize,
) -> BusResult<Page<TrackSummary>> {
    let cursor = TrackCursor::parse(after)?;
    let total = all.len() as u64;
    all.sort_unstable_by(|a, b| (b.last_ms, &b.id).cmp(&(a.last_ms, &a.id)));
    let rest: Vec<TrackSummary> = all
        .into_iter()
        .filter(|t| cursor.as_ref().is_none_or(|c| c.before(t)))
        .take(limit.saturating_add(1))
        .collect();
    Ok(Page::cut(rest, limit, Some(total), TrackCursor::of))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(id: &str, last_ms: i64) -> TrackSummary {
        TrackSummary {
            id: id.into(),
            messages: 1,
            first_ms: 0,
            last_ms,
        }
    }

    #[test]
    fn track_pages_walk_every_entry_once_in_activity_order() {
        let all = vec![
            track("a", 5),
            track("b", 9),
            track("c", 5),
            track("d:with:colons", 1),
        ];
        let mut seen = Vec::new();
        let mut after = None;
        loop {
            let page = track_page(all.clone(), after.as_deref(), 1).unwrap();
            assert_eq!(page.total, Some(4));
            seen.extend(page.items.into_iter().map(|t| t.id));
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        assert_eq!(seen, ["b", "c", "a", "d:with:colons"]);
        let err = track_page(all, Some("yesterday"), 1).unwrap_err();
        assert!(err.to_string().contains("\"yesterday\""), "{err}");
    }

    #[test]
    fn a_prune_never_reaches_into_the_dedupe_window() {
        let config = BusConfig::default();
        let window = millis(config.dedupe_window);
        let before = PruneBefore {
            messages_ms: Some(1_000_000),
            dead_letters_ms: Some(5_000_000),
            effects_ms: None,
        };
        assert_eq!(
            before.messages_cut(&config, 1_000_000),
            Some(1_000_000 - window)
        );
        // Well past the window, the retention's own cut applies.
        let later = 9_000_000 + window;
        assert_eq!(before.messages_cut(&config, later), Some(1_000_000));
        assert_eq!(before.dead_letters_cut(1_000), Some(1_000));
        assert_eq!(PruneBefore::default().messages_cut(&config, 5), None);
    }
}
