//! The LangChain-compatible mode equals langchain-core 1.8's `trim_messages` on the vectors in
//! `tests/vectors/langchain_trim.json` (made by `generate_langchain_trim.py` from langchain-core
//! itself: its unit-test cases plus tool-call cases under the approximate counter).

use chorus_context::trim::langchain::{
    LangChainOptions, MessageType, Strategy, split_lines, trim_messages,
};
use chorus_context::{ApproxOptions, count_tokens_approximately};
use chorus_core::{Content, ContentPart, Message};
use serde_json::Value;

fn content_len(
    m: &Message,
    text: impl Fn(&str) -> usize,
    blocks: impl Fn(&[ContentPart]) -> usize,
) -> usize {
    match m.content() {
        Some(Content::Text(t)) => text(t),
        Some(Content::Parts(p)) => blocks(p),
        None => 0,
    }
}

fn texts(parts: &[ContentPart]) -> Vec<&str> {
    parts.iter().filter_map(ContentPart::as_text).collect()
}

/// The counters the generator names, written again over chorus messages.
type Counter = Box<dyn Fn(&[Message]) -> usize>;
type Split = Box<dyn Fn(&str) -> Vec<String>>;

fn counter(name: &str) -> Counter {
    match name {
        "dummy" => Box::new(|ms: &[Message]| {
            ms.iter()
                .map(|m| content_len(m, |_| 10, |p| 6 + 4 * p.len()))
                .sum()
        }),
        "len" => Box::new(|ms: &[Message]| ms.len()),
        "chars" => Box::new(|ms: &[Message]| {
            ms.iter()
                .map(|m| content_len(m, |t| t.chars().count(), |p| p.len()))
                .sum()
        }),
        "words" => Box::new(|ms: &[Message]| {
            ms.iter()
                .map(|m| {
                    content_len(
                        m,
                        |t| t.split(' ').count(),
                        |p| texts(p).join(" ").split(' ').count(),
                    )
                })
                .sum()
        }),
        "text_len" => Box::new(|ms: &[Message]| {
            ms.iter()
                .map(|m| {
                    content_len(
                        m,
                        |t| t.chars().count(),
                        |p| texts(p).iter().map(|t| t.chars().count()).sum(),
                    )
                })
                .sum()
        }),
        "approximate" => {
            Box::new(|ms: &[Message]| count_tokens_approximately(ms, &ApproxOptions::default()))
        }
        other => panic!("unknown counter {other}"),
    }
}

fn splitter(name: &str) -> Split {
    match name {
        "default" => Box::new(split_lines),
        "chars" => Box::new(|t: &str| t.chars().map(String::from).collect()),
        "space" => Box::new(|t: &str| {
            let parts: Vec<&str> = t.split(' ').collect();
            let last = parts.len() - 1;
            parts
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    if i < last {
                        format!("{p} ")
                    } else {
                        (*p).to_owned()
                    }
                })
                .collect()
        }),
        other => panic!("unknown splitter {other}"),
    }
}

fn types(value: Option<&Value>) -> Vec<MessageType> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![MessageType::parse(s).unwrap()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| MessageType::parse(v.as_str().unwrap()).unwrap())
            .collect(),
        Some(other) => panic!("bad type list {other}"),
    }
}

#[test]
fn equals_langchain_core_on_every_vector() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/langchain_trim.json"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(file["langchain_core"].as_str().unwrap().starts_with("1.8."));
    let cases = file["cases"].as_array().unwrap();
    assert!(cases.len() > 80);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let messages: Vec<Message> = serde_json::from_value(case["messages"].clone()).unwrap();
        let p = &case["params"];
        let options = LangChainOptions {
            max_tokens: p["max_tokens"].as_u64().unwrap() as usize,
            strategy: match p.get("strategy").and_then(Value::as_str) {
                Some("first") => Strategy::First,
                _ => Strategy::Last,
            },
            allow_partial: p
                .get("allow_partial")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            start_on: types(p.get("start_on")),
            end_on: types(p.get("end_on")),
            include_system: p
                .get("include_system")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        let count = counter(case["counter"].as_str().unwrap());
        let split = splitter(case["splitter"].as_str().unwrap());
        let result = trim_messages(&messages, &options, count.as_ref(), split.as_ref());
        match (result, case.get("expected"), case.get("error")) {
            (Ok(kept), Some(expected), None) => {
                let kept = serde_json::to_value(&kept).unwrap();
                assert_eq!(&kept, expected, "case {name}");
            }
            (Err(e), None, Some(error)) => {
                assert!(
                    e.to_string().contains(error.as_str().unwrap()),
                    "case {name}: {e}"
                );
            }
            (got, _, _) => panic!("case {name}: got {got:?}, vector {case}"),
        }
    }
}
