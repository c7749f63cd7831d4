//! What the Harmony mapping of `chorus-harmony` does not carry, found before rendering.

use chorus_core::{Content, ContentPart, Message, Role};

use crate::common::extras::drop_all;
use crate::loss::{Losses, Policy};

/// Reports every change the Harmony text makes to `messages` beyond those `to_harmony` reports.
pub(super) fn report(messages: &[Message], losses: &mut Losses) {
    let mut seen = false;
    let mut others = false;
    let mut calls = 0;
    for (i, m) in messages.iter().enumerate() {
        let at = format!("/messages/{i}");
        drop_all(&m.extra, &at, "Harmony", losses);
        if matches!(m.role, Role::System | Role::Developer) {
            instructions(m, &at, seen, others, losses);
            seen = true;
            continue;
        }
        others = true;
        if m.content().is_none() {
            losses.push(
                format!("{at}/content"),
                Policy::Downgraded,
                "missing or null content is not carried as such",
            );
        }
        if let Some(Content::Parts(parts)) = m.content() {
            parts_losses(m, parts, &at, losses);
        }
        if m.role == Role::Assistant && m.text().is_empty() {
            let has_text = match m.content() {
                Some(Content::Text(_)) => true,
                Some(Content::Parts(parts)) => parts.iter().any(|p| p.as_text().is_some()),
                None => false,
            };
            if m.calls().is_empty() {
                losses.push(
                    &at,
                    Policy::Dropped,
                    "an assistant message without text or calls is not rendered",
                );
            } else if has_text {
                losses.push(
                    format!("{at}/content"),
                    Policy::Dropped,
                    "empty text next to calls is not rendered",
                );
            }
        }
        for (k, call) in m.calls().iter().enumerate() {
            let call_at = format!("{at}/tool_calls/{k}");
            if call.id != format!("call_{calls}") {
                losses.push(
                    format!("{call_at}/id"),
                    Policy::Dropped,
                    format!("Harmony calls have no ids; parsing numbers them (call_{calls})"),
                );
            }
            drop_all(&call.extra, &call_at, "a Harmony call", losses);
            drop_all(
                &call.function.extra,
                &format!("{call_at}/function"),
                "a Harmony call",
                losses,
            );
            calls += 1;
        }
        if m.role == Role::Tool && m.name.is_none() {
            losses.push(
                format!("{at}/name"),
                Policy::Downgraded,
                "a tool result comes back named after its function",
            );
        }
    }
}

/// System and developer messages all become one developer message at the start.
fn instructions(m: &Message, at: &str, seen: bool, others: bool, losses: &mut Losses) {
    if m.role == Role::System {
        losses.push(
            format!("{at}/role"),
            Policy::Downgraded,
            "system text becomes the developer instructions",
        );
    }
    if seen {
        losses.push(
            at,
            Policy::Merged,
            "joined into one developer instructions block",
        );
    } else if others {
        losses.push(
            at,
            Policy::Moved,
            "developer instructions come before the conversation",
        );
    }
    if !matches!(m.content(), Some(Content::Text(t)) if !t.is_empty()) {
        losses.push(
            format!("{at}/content"),
            Policy::Downgraded,
            "only non-empty text instructions are carried as they are",
        );
    }
}

/// Text parts are joined, reasoning keeps only its text; other parts are reported by the mapping.
fn parts_losses(m: &Message, parts: &[ContentPart], at: &str, losses: &mut Losses) {
    let mut texts = 0;
    let mut reasoning = 0;
    let mut text_before = false;
    for (k, part) in parts.iter().enumerate() {
        let part_at = format!("{at}/content/{k}");
        match part {
            ContentPart::Text(t) => {
                texts += 1;
                text_before |= !t.text.is_empty();
                if t.index.is_some() {
                    losses.push(
                        format!("{part_at}/index"),
                        Policy::Dropped,
                        "Harmony text has no part index",
                    );
                }
                drop_all(&t.extra, &part_at, "Harmony text", losses);
            }
            ContentPart::Reasoning(r) => {
                reasoning += 1;
                if text_before && m.role == Role::Assistant {
                    losses.push(
                        &part_at,
                        Policy::Moved,
                        "reasoning is rendered before the text (the analysis channel comes first)",
                    );
                }
                if r.signature.is_some() {
                    losses.push(
                        format!("{part_at}/signature"),
                        Policy::Dropped,
                        "Harmony has no reasoning signatures",
                    );
                }
                drop_all(&r.extra, &part_at, "Harmony reasoning", losses);
            }
            _ => {}
        }
    }
    if texts > 1 {
        losses.push(
            format!("{at}/content"),
            Policy::Merged,
            "text parts are joined into one message",
        );
    } else if texts == 0 && reasoning == 0 && m.calls().is_empty() {
        losses.push(
            format!("{at}/content"),
            Policy::Downgraded,
            "a message without text comes back with empty text",
        );
    }
}
