//! Lenient parsing's repairs as plain (kind, detail) pairs for Python.

use chorus_harmony::{DiagnosticKind, Repair};

/// The kind of a repair in snake case, and what it holds (a word, a token id), if anything.
pub(crate) fn describe(kind: &DiagnosticKind) -> (&'static str, Option<String>) {
    match kind {
        DiagnosticKind::Header(repair) => describe_header(repair),
        DiagnosticKind::MissingStart => ("missing_start", None),
        DiagnosticKind::StrayText => ("stray_text", None),
        DiagnosticKind::StopInHeader => ("stop_in_header", None),
        DiagnosticKind::HeaderCutOff => ("header_cut_off", None),
        DiagnosticKind::MissingEnd => ("missing_end", None),
        DiagnosticKind::RepeatedMessage => ("repeated_message", None),
        DiagnosticKind::RestartedHeader => ("restarted_header", None),
        DiagnosticKind::StrayStop(id) => ("stray_stop", Some(id.to_string())),
        DiagnosticKind::UnknownToken(id) => ("unknown_token", Some(id.to_string())),
        DiagnosticKind::InvalidUtf8InHeader => ("invalid_utf8_in_header", None),
    }
}

fn describe_header(repair: &Repair) -> (&'static str, Option<String>) {
    match repair {
        Repair::DoubledChannel => ("doubled_channel", None),
        Repair::EmptyChannel => ("empty_channel", None),
        Repair::GarbageChannel(text) => ("garbage_channel", Some(text.clone())),
        Repair::UnknownChannel(text) => ("unknown_channel", Some(text.clone())),
        Repair::MissingRole => ("missing_role", None),
        Repair::SpacedWord(text) => ("spaced_word", Some(text.clone())),
        Repair::RoleWasRecipient(text) => ("role_was_recipient", Some(text.clone())),
        Repair::RecipientOnAnalysis => ("recipient_on_analysis", None),
        Repair::UnplacedText(text) => ("unplaced_text", Some(text.clone())),
    }
}
