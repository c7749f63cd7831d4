//! The o200k pre-tokenizer's piece boundaries for ASCII text, without a regex.
//!
//! [`ascii_piece_end`] gives the end of the piece starting at a position exactly as the o200k
//! pattern would, or `None` when a byte it must look at is not ASCII (the caller then asks the
//! regex). The alternatives are tried in the pattern's order: letters (optionally after one
//! prefix character, with an English contraction), 1-3 digits, punctuation runs, whitespace.

/// A byte of `s` at `i`: `Some(None)` past the end, `None` when it is not ASCII.
fn ascii(s: &[u8], i: usize) -> Option<Option<u8>> {
    match s.get(i) {
        None => Some(None),
        Some(&b) if b.is_ascii() => Some(Some(b)),
        Some(_) => None,
    }
}

/// `\s` for ASCII.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `[^\s\p{L}\p{N}]` for ASCII.
fn is_other(b: u8) -> bool {
    !is_space(b) && !b.is_ascii_alphanumeric()
}

/// Advances `i` over bytes satisfying `class`; `None` on a non-ASCII byte.
fn run(s: &[u8], mut i: usize, class: impl Fn(u8) -> bool) -> Option<usize> {
    while let Some(b) = ascii(s, i)? {
        if !class(b) {
            break;
        }
        i += 1;
    }
    Some(i)
}

/// The end of the piece that starts at `at` (`at < s.len()`), or `None` to defer to the regex.
pub(crate) fn ascii_piece_end(s: &[u8], at: usize) -> Option<usize> {
    let first = ascii(s, at)??;
    // `[^\r\n\p{L}\p{N}]?` then `\p{Lu}*\p{Ll}+` (first branch) or `\p{Lu}+\p{Ll}*` (second).
    let is_prefix = first != b'\r' && first != b'\n' && !first.is_ascii_alphanumeric();
    let start = if is_prefix { at + 1 } else { at };
    let upper_end = run(s, start, |b| b.is_ascii_uppercase())?;
    let lower_end = run(s, upper_end, |b| b.is_ascii_lowercase())?;
    if lower_end > start {
        return contraction_end(s, lower_end);
    }
    if first.is_ascii_digit() {
        let mut end = at + 1;
        while end < at + 3 && ascii(s, end)?.is_some_and(|b| b.is_ascii_digit()) {
            end += 1;
        }
        return Some(end);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
    let punct_start = if first == b' ' && ascii(s, at + 1)?.is_some_and(is_other) {
        at + 1
    } else {
        at
    };
    if ascii(s, punct_start)?.is_some_and(is_other) {
        let end = run(s, punct_start, is_other)?;
        return run(s, end, |b| matches!(b, b'\r' | b'\n' | b'/'));
    }
    // `\s*[\r\n]+`, then `\s+(?!\S)`, then `\s+`.
    let mut end = at;
    let mut after_newline = None;
    while let Some(b) = ascii(s, end)? {
        if !is_space(b) {
            break;
        }
        end += 1;
        if b == b'\r' || b == b'\n' {
            after_newline = Some(end);
        }
    }
    if let Some(newline_end) = after_newline {
        return Some(newline_end);
    }
    let followed_by_text = ascii(s, end)?.is_some();
    Some(if followed_by_text && end - at >= 2 {
        end - 1
    } else {
        end
    })
}

/// After letters ending at `i`: the end including `'s 't 're 've 'm 'll 'd` (any case).
fn contraction_end(s: &[u8], i: usize) -> Option<usize> {
    if ascii(s, i)? != Some(b'\'') {
        return Some(i);
    }
    let lower = |j| ascii(s, j).map(|b| b.map(|b| b.to_ascii_lowercase()));
    Some(match (lower(i + 1)?, lower(i + 2)?) {
        (Some(b's' | b't' | b'm' | b'd'), _) => i + 2,
        (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => i + 3,
        _ => i,
    })
}
