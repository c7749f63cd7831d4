//! Confirmations a page at a time: oldest first (creation time, then id), continued after the
//! cursor `<created_at_ms>:<id>` of the last one read.

use chorus_bus::Page;

use super::{ConfirmError, Confirmation, ConfirmationState};

/// Where a listing continues: after this creation time and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub created_at_ms: u64,
    pub id: String,
}

impl Cursor {
    /// Reads a cursor handed out with a page.
    pub(crate) fn parse(after: Option<&str>) -> Result<Option<Cursor>, ConfirmError> {
        let Some(s) = after else { return Ok(None) };
        let bad = || {
            ConfirmError::BadCursor(format!(
                "{s:?} is not a cursor of this listing (expected <time>:<id>: pass the `next` of the page before, unchanged)"
            ))
        };
        let (ms, id) = s.split_once(':').ok_or_else(bad)?;
        Ok(Some(Cursor {
            created_at_ms: ms.parse().map_err(|_| bad())?,
            id: id.to_owned(),
        }))
    }

    /// True when `c` comes after the cursor.
    pub(crate) fn before(&self, c: &Confirmation) -> bool {
        (c.created_at_ms, c.id.as_str()) > (self.created_at_ms, self.id.as_str())
    }
}

/// The cursor continuing after `c`.
pub(crate) fn cursor_of(c: &Confirmation) -> String {
    format!("{}:{}", c.created_at_ms, c.id)
}

/// The page of `items` (in listing order, after the cursor, at most `limit + 1` of them): the
/// extra one only tells that more follow.
pub(crate) fn cut(mut items: Vec<Confirmation>, limit: usize, total: u64) -> Page<Confirmation> {
    let more = items.len() > limit;
    items.truncate(limit);
    let next = if more {
        items.last().map(cursor_of)
    } else {
        None
    };
    Page {
        items,
        next,
        total: Some(total),
    }
}

/// A page of `all` (in any order): those in `state`, sorted, after `after`.
pub(crate) fn select(
    all: impl IntoIterator<Item = Confirmation>,
    state: Option<ConfirmationState>,
    after: Option<&str>,
    limit: usize,
) -> Result<Page<Confirmation>, ConfirmError> {
    let cursor = Cursor::parse(after)?;
    let mut matching: Vec<Confirmation> = all
        .into_iter()
        .filter(|c| state.is_none_or(|s| c.state == s))
        .collect();
    let total = matching.len() as u64;
    matching.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    let rest = matching
        .into_iter()
        .filter(|c| cursor.as_ref().is_none_or(|k| k.before(c)))
        .take(limit.saturating_add(1))
        .collect();
    Ok(cut(rest, limit, total))
}

/// Whether a prune removes `c`: a rejected or consumed confirmation created before `before_ms`
/// (pending and approved ones still wait for a person or for their call).
pub(crate) fn prunable(c: &Confirmation, before_ms: u64) -> bool {
    c.created_at_ms < before_ms
        && matches!(
            c.state,
            ConfirmationState::Rejected | ConfirmationState::Consumed
        )
}
