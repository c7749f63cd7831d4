//! Golden tests: every case of `tests/golden/cases/` (one chorus conversation per feature; the
//! names case also with the `<history>` fold policy) encoded into every format must give exactly
//! `tests/golden/<format>/<case>.json` — the output in the
//! provider's documented shape and the losses the target reports. Each golden output must decode,
//! keep tool pairing and encode back to itself; a loss-free one must decode to the case.
//!
//! `CHORUS_GOLDEN_WRITE=1 cargo test -p chorus-formats --test golden` rewrites the files; every
//! rewritten file must then be reviewed against the provider's documentation before committing.

use std::path::{Path, PathBuf};

use chorus_core::{Content, ContentPart, Conversation, Nullable};
use chorus_formats::{EncodeOptions, Format, Loss, NamePolicy, is_paired};
use serde_json::{Value, json};

/// The features every format is checked on.
const CASES: [&str; 11] = [
    "text",
    "images",
    "audio",
    "tool_calls",
    "parallel_tool_calls",
    "tool_errors",
    "multimodal_tool_results",
    "reasoning",
    "citations",
    "multi_agent_names",
    "multi_agent_names_history",
];

/// The input file of a case: the `_history` variant encodes the names case with the fold policy.
fn input_of(name: &str) -> (&str, EncodeOptions) {
    match name.strip_suffix("_history") {
        Some(base) => (
            base,
            EncodeOptions {
                names: NamePolicy::History,
                ..EncodeOptions::default()
            },
        ),
        None => (name, EncodeOptions::default()),
    }
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (write it with CHORUS_GOLDEN_WRITE=1)",
            path.display()
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn case(name: &str) -> Conversation {
    let value = read_json(&dir().join("cases").join(format!("{name}.json")));
    serde_json::from_value(value).unwrap_or_else(|e| panic!("case {name}: {e}"))
}

/// Text formats are stored as a JSON string, the others as the JSON document.
fn is_text(format: Format) -> bool {
    matches!(format, Format::Qwen3 | Format::Harmony)
}

fn as_value(format: Format, output: &str) -> Value {
    if is_text(format) {
        Value::String(output.to_owned())
    } else {
        serde_json::from_str(output).expect("JSON formats encode JSON")
    }
}

fn as_input(format: Format, golden: &Value) -> String {
    match golden {
        Value::String(text) if is_text(format) => text.clone(),
        other => other.to_string(),
    }
}

/// Forms that carry the same information: text content as one text part; no call type as `function`.
fn normalized(conversation: &Conversation) -> Conversation {
    let mut out = conversation.clone();
    for m in &mut out.messages {
        if let Nullable::Value(Content::Text(text)) = &m.content {
            m.content = Nullable::Value(Content::Parts(vec![ContentPart::text(text.clone())]));
        }
        if let Nullable::Value(calls) = &mut m.tool_calls {
            for call in calls.iter_mut() {
                call.kind.get_or_insert_with(|| "function".into());
            }
        }
    }
    out
}

/// Checks one format against its golden files; returns the number of cases checked.
fn check(format: Format) -> usize {
    let write = std::env::var_os("CHORUS_GOLDEN_WRITE").is_some();
    let folder = dir().join(format.id());
    for name in CASES {
        let (input, options) = input_of(name);
        let conversation = case(input);
        let encoded = format.encode(&conversation, &options).unwrap();
        let actual = json!({"output": as_value(format, &encoded.value), "losses": encoded.losses});
        let path = folder.join(format!("{name}.json"));
        if write {
            std::fs::create_dir_all(&folder).unwrap();
            let text = serde_json::to_string_pretty(&actual).unwrap() + "\n";
            std::fs::write(&path, text).unwrap();
        }
        let golden = read_json(&path);
        assert_eq!(
            actual["output"],
            golden["output"],
            "{}/{name}: output differs from the golden file",
            format.id()
        );
        let losses: Vec<Loss> = serde_json::from_value(golden["losses"].clone()).unwrap();
        assert_eq!(
            encoded.losses,
            losses,
            "{}/{name}: losses differ",
            format.id()
        );

        let back = format
            .decode(&as_input(format, &golden["output"]))
            .unwrap_or_else(|e| {
                panic!("{}/{name}: golden output does not decode: {e}", format.id())
            });
        // A response holds the assistant's calls without their results, which come later.
        assert!(
            format == Format::OpenAiChatResponse || is_paired(&back.messages),
            "{}/{name}: pairing lost",
            format.id()
        );
        let again = format.encode(&back, &options).unwrap();
        // Harmony renders tool definitions as a TypeScript namespace that parsing does not read
        // back; that loss is reported at `/tools`, and only then may the second encoding differ.
        let tools_lost = losses.iter().any(|l| l.path == "/tools");
        assert!(
            tools_lost || as_value(format, &again.value) == golden["output"],
            "{}/{name}: decoding and encoding the golden output changes it:\n{}",
            format.id(),
            again.value
        );
        if losses.is_empty() {
            assert_eq!(
                normalized(&back),
                normalized(&conversation),
                "{}/{name}: loss-free but the decoded conversation differs",
                format.id()
            );
        }
    }
    CASES.len()
}

#[test]
fn chorus_matches_its_golden_files() {
    assert_eq!(check(Format::Chorus), 11);
}

#[test]
fn openai_chat_matches_its_golden_files() {
    assert_eq!(check(Format::OpenAiChat), 11);
}

#[test]
fn openai_chat_response_matches_its_golden_files() {
    assert_eq!(check(Format::OpenAiChatResponse), 11);
}

#[test]
fn openai_responses_matches_its_golden_files() {
    assert_eq!(check(Format::OpenAiResponses), 11);
}

#[test]
fn anthropic_matches_its_golden_files() {
    assert_eq!(check(Format::Anthropic), 11);
}

#[test]
fn gemini_matches_its_golden_files() {
    assert_eq!(check(Format::Gemini), 11);
}

#[test]
fn qwen3_matches_its_golden_files() {
    assert_eq!(check(Format::Qwen3), 11);
}

#[test]
fn agentscope_matches_its_golden_files() {
    assert_eq!(check(Format::AgentScope), 11);
}

#[test]
fn a2a_matches_its_golden_files() {
    assert_eq!(check(Format::A2a), 11);
}

#[test]
fn harmony_matches_its_golden_files() {
    assert_eq!(check(Format::Harmony), 11);
}

#[test]
fn every_format_has_golden_files_and_no_stray_ones() {
    for format in Format::ALL {
        let folder = dir().join(format.id());
        let mut found: Vec<String> = std::fs::read_dir(&folder)
            .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        let mut expected: Vec<String> = CASES.iter().map(|c| format!("{c}.json")).collect();
        expected.sort();
        assert_eq!(found, expected, "{}", format.id());
    }
}
