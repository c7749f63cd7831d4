//! Every provider encoder's output validates against the provider's official Python SDK request
//! types (tests/oracle/sdk_validate.py): `openai` Chat Completions and Responses create params,
//! `anthropic` MessageCreateParams, `google-genai` Content list and GenerateContentConfig, with
//! pydantic `TypeAdapter` in strict mode and unknown keys forbidden. Checked: the golden outputs
//! of tests/golden/ and conversations generated afresh on every run (parts of every kind, names,
//! reasoning, tool calls with missing and orphan results, tool definitions, request parameters,
//! Gemini's camelCase spelling), each encoded by all four encoders. Every A2A message (golden
//! and generated) is parsed by the `a2a-sdk` package's protobuf `Message` with unknown fields
//! refused and its required-field check (tests/oracle/a2a_validate.py).
//!
//! Python comes from `CHORUS_TEST_PYTHON` (with the pinned SDKs of .ci/python-oracles.txt); unset,
//! the test says it did not run. Run alone: `CHORUS_TEST_PYTHON=.../bin/python cargo test -p
//! chorus-formats --test sdk_oracle -- --nocapture`; `SDK_ORACLE_CASES` changes the number of
//! generated conversations (default 400). A conversation that once failed is kept in
//! tests/sdk_oracle.regressions.jsonl and runs first.

use std::collections::BTreeMap;
use std::path::Path;

use chorus_core::Conversation;
use chorus_formats::{EncodeOptions, Format, NamePolicy};
mod support;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracle/sdk_validate.py");
const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/sdk_oracle.regressions.jsonl"
);

/// The encoders whose output a provider SDK types.
const FORMATS: [Format; 4] = [
    Format::OpenAiChat,
    Format::OpenAiResponses,
    Format::Anthropic,
    Format::Gemini,
];

const TEXTS: [&str; 6] = [
    "Weather in Paris?",
    "东京の天気は?",
    "Привет",
    "two\nlines",
    "",
    "{\"looks\": \"like json\"}",
];

fn text() -> impl Strategy<Value = String> {
    prop::sample::select(&TEXTS[..]).prop_map(str::to_owned)
}

fn detail() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(vec!["low", "high", "auto"]))
}

/// A content part of any kind chorus has.
fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => text().prop_map(|t| json!({"type": "text", "text": t})),
        2 => (text(), prop::option::of(Just("RXVjbGlk")), any::<bool>()).prop_map(|(t, sig, with_id)| {
            let mut r = json!({"type": "reasoning", "text": t});
            if let Some(sig) = sig {
                r["signature"] = json!(sig);
            }
            if with_id {
                r["x-openai-responses"] = json!({"id": "rs_1"});
            }
            r
        }),
        2 => (prop::sample::select(vec!["https://example.com/a.jpg", "data:image/png;base64,iVBORw0KGgo="]), detail())
            .prop_map(|(url, detail)| {
                let mut image = json!({"url": url});
                if let Some(d) = detail {
                    image["detail"] = json!(d);
                }
                json!({"type": "image_url", "image_url": image})
            }),
        1 => prop::sample::select(vec!["wav", "mp3"])
            .prop_map(|f| json!({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": f}})),
        1 => prop::sample::select(vec![
            json!({"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "r.pdf"}),
            json!({"file_id": "file-abc"}),
        ])
        .prop_map(|file| json!({"type": "file", "file": file})),
        1 => Just(json!({"type": "data", "kind": "state", "data": {"step": 1}})),
    ]
}

fn content() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => text().prop_map(Value::String),
        3 => prop::collection::vec(part(), 0..4).prop_map(Value::Array),
        1 => Just(Value::Null),
    ]
}

/// A tool result: text, a JSON object, a seed-000 error, or parts with an image.
fn result() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("21 degrees")),
        Just(json!("{\"temp_c\": 21}")),
        Just(json!(
            "{\"status\": \"error\", \"error_type\": \"NotFound\", \"message\": \"no city\"}"
        )),
        Just(json!([{"type": "text", "text": "chart:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}])),
    ]
}

/// One plain message, or an assistant turn with calls and (some of) their results.
fn turn() -> impl Strategy<Value = Vec<Value>> {
    let plain = (
        prop::sample::select(vec!["system", "developer", "user", "user", "assistant"]),
        content(),
        prop::option::weighted(0.2, prop::sample::select(vec!["alice", "bob"])),
        prop::option::weighted(0.15, Just("msg_1")),
    )
        .prop_map(|(role, content, name, id)| {
            let mut m = json!({"role": role, "content": content});
            if let Some(name) = name {
                m["name"] = json!(name);
            }
            if let (Some(id), "assistant") = (id, role) {
                m["id"] = json!(id);
            }
            vec![m]
        });
    let calls = (
        content(),
        1usize..4,
        prop::collection::vec((result(), prop::bool::weighted(0.9)), 3),
    )
        .prop_map(|(content, n, results)| {
            let calls: Vec<Value> = (0..n)
                .map(|k| {
                    json!({"id": format!("k{k}"), "type": "function", "function": {
                    "name": if k == 1 { "get_time" } else { "get_weather" },
                    "arguments": format!("{{\"city\": \"c{k}\"}}")}})
                })
                .collect();
            let mut out =
                vec![json!({"role": "assistant", "content": content, "tool_calls": calls})];
            for (k, (result, kept)) in results.into_iter().take(n).enumerate() {
                if kept {
                    out.push(
                        json!({"role": "tool", "tool_call_id": format!("k{k}"), "content": result}),
                    );
                }
            }
            out
        });
    let orphan = Just(vec![
        json!({"role": "tool", "tool_call_id": "no_such_call", "content": "late"}),
    ]);
    prop_oneof![6 => plain, 3 => calls, 1 => orphan]
}

fn tool_definition() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["get_weather", "get_time"]),
        prop::option::of(any::<bool>()),
        any::<bool>(),
    )
        .prop_map(|(name, strict, with_parameters)| {
            let mut function = json!({"name": name, "description": "Looks it up"});
            if with_parameters {
                function["parameters"] = json!({"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"], "additionalProperties": false});
            }
            if let Some(strict) = strict {
                function["strict"] = json!(strict);
            }
            json!({"type": "function", "function": function})
        })
}

/// Request parameters in the Chat Completions names chorus keeps them under.
fn params() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::of(Just(json!("some-model"))),
        prop::option::of(prop::sample::select(vec![json!(0), json!(0.7), json!(1.5)])),
        prop::option::of(Just(json!(0.9))),
        prop::option::of((any::<bool>(), 1u32..4096)),
        prop::option::of(prop::sample::select(vec![json!("END"), json!(["END", "STOP"])])),
        prop::option::of(prop::sample::select(vec![
            json!("auto"),
            json!("none"),
            json!("required"),
            json!({"type": "function", "function": {"name": "get_weather"}}),
        ])),
        prop::option::of(any::<bool>()),
        prop::option::of(prop::sample::select(vec![
            json!({"type": "json_schema", "json_schema": {"name": "weather", "strict": true,
                "schema": {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"], "additionalProperties": false}}}),
            json!({"type": "json_object"}),
            json!({"type": "text"}),
        ])),
    )
        .prop_map(|(model, temperature, top_p, max, stop, choice, parallel, format)| {
            let mut out = Map::new();
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(v) = value {
                    out.insert(key.to_owned(), v);
                }
            };
            put("model", model);
            put("temperature", temperature);
            put("top_p", top_p);
            if let Some((old_name, n)) = max {
                let key = if old_name { "max_tokens" } else { "max_completion_tokens" };
                put(key, Some(json!(n)));
            }
            put("stop", stop);
            put("tool_choice", choice);
            put("parallel_tool_calls", parallel.map(Value::Bool));
            put("response_format", format);
            out
        })
}

/// A chorus conversation; call ids are made unique across it.
fn conversation() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(turn(), 1..6),
        prop::option::of(prop::collection::vec(tool_definition(), 1..3)),
        params(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(turns, tools, params, camel)| {
            let mut messages: Vec<Value> = Vec::new();
            for (t, turn) in turns.into_iter().enumerate() {
                for mut m in turn {
                    let calls = m.get_mut("tool_calls").and_then(Value::as_array_mut);
                    for call in calls.into_iter().flatten() {
                        call["id"] = json!(format!("call_{t}_{}", call["id"].as_str().unwrap()));
                    }
                    if m["role"] == "tool" && m["tool_call_id"] != "no_such_call" {
                        m["tool_call_id"] =
                            json!(format!("call_{t}_{}", m["tool_call_id"].as_str().unwrap()));
                    }
                    messages.push(m);
                }
            }
            let mut c = json!({"messages": messages});
            if let Some(tools) = tools {
                c["tools"] = Value::Array(tools);
            }
            if let Value::Object(map) = &mut c {
                map.extend(params);
                if camel {
                    map.insert("x-gemini".into(), json!({"$spelling": "camelCase"}));
                }
            }
            c
        })
}

/// A request to validate: where it comes from, the format and the encoder's output.
struct Request {
    source: String,
    format: Format,
    value: Value,
}

fn golden_requests() -> Vec<Request> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut out = Vec::new();
    for format in FORMATS {
        let mut files: Vec<_> = std::fs::read_dir(dir.join(format.id()))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let golden: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            out.push(Request {
                source: format!("golden {}", path.display()),
                format,
                value: golden["output"].clone(),
            });
        }
    }
    out
}

/// Every encoder's request for `conversation` (with each name policy in turn).
fn encoded(n: usize, conversation: &Value) -> Vec<Request> {
    let c: Conversation = serde_json::from_value(conversation.clone())
        .unwrap_or_else(|e| panic!("the generator made an invalid conversation: {e}"));
    let options = EncodeOptions {
        names: if n.is_multiple_of(2) {
            NamePolicy::Prefix
        } else {
            NamePolicy::History
        },
        ..EncodeOptions::default()
    };
    FORMATS
        .iter()
        .map(|&format| {
            let text = format.encode(&c, &options).unwrap().value;
            Request {
                source: format!(
                    "conversation {}",
                    serde_json::to_string(conversation).unwrap()
                ),
                format,
                value: serde_json::from_str(&text).unwrap(),
            }
        })
        .collect()
}

/// The SDKs' verdicts, in order, from one Python process.
fn oracle(python: &str, requests: &[Request]) -> Vec<Value> {
    let mut input = Vec::new();
    for (id, r) in requests.iter().enumerate() {
        let line = json!({"id": id, "format": r.format.id(), "request": r.value});
        serde_json::to_writer(&mut input, &line).unwrap();
        input.push(b'\n');
    }
    let output = support::run(
        python,
        &[SCRIPT],
        input,
        "the SDK oracle (are openai, anthropic and google-genai installed?)",
    );
    let verdicts: Vec<Value> = String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(verdicts.len(), requests.len(), "one verdict per request");
    verdicts
}

fn regressions() -> Vec<Value> {
    support::kept(REGRESSIONS)
}

/// Counts per encoder: valid, checked, and how often each note was needed.
#[derive(Default)]
struct Tally {
    valid: usize,
    checked: usize,
    notes: BTreeMap<String, usize>,
}

#[test]
fn every_encoder_output_validates_against_the_provider_sdk_types() {
    let Some(python) = support::python("openai, anthropic, google-genai") else {
        return;
    };
    let count = support::case_count("SDK_ORACLE_CASES", 400);
    let mut conversations = regressions();
    let kept = conversations.len();
    conversations.extend(support::draw(&conversation(), count));
    let mut requests = golden_requests();
    let golden = requests.len();
    for (n, c) in conversations.iter().enumerate() {
        requests.extend(encoded(n, c));
    }
    let verdicts = oracle(&python, &requests);
    let mut tally: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut failures = Vec::new();
    for (request, verdict) in requests.iter().zip(&verdicts) {
        let t = tally.entry(request.format.id()).or_default();
        t.checked += 1;
        for note in verdict["notes"].as_array().into_iter().flatten() {
            *t.notes
                .entry(note.as_str().unwrap_or("?").to_owned())
                .or_default() += 1;
        }
        if verdict["ok"] == true {
            t.valid += 1;
        } else {
            failures.push(format!(
                "{} request from {}:\n{}\n--- SDK: {}",
                request.format.id(),
                request.source,
                serde_json::to_string(&request.value).unwrap(),
                verdict["error"].as_str().unwrap_or("?")
            ));
        }
    }
    println!(
        "SDK request types: {golden} golden outputs, {} conversations ({kept} kept regressions, \
         {count} generated) × {} encoders",
        conversations.len(),
        FORMATS.len()
    );
    for (format, t) in &tally {
        println!(
            "  {format}: {} of {} valid; {:?}",
            t.valid, t.checked, t.notes
        );
    }
    assert!(
        failures.is_empty(),
        "{} requests fail their SDK type; first:\n{}",
        failures.len(),
        failures[..failures.len().min(3)].join("\n\n")
    );
    assert!(
        tally.values().all(|t| t.checked >= count),
        "every encoder checked on every conversation"
    );
}

const A2A_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracle/a2a_validate.py");

/// Every A2A message of `value` (an encoder's output: an array of messages).
fn a2a_messages(source: &str, value: &Value) -> Vec<(String, Value)> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{source}: the a2a encoder writes an array"))
        .iter()
        .enumerate()
        .map(|(i, m)| (format!("{source}, message {i}"), m.clone()))
        .collect()
}

#[test]
fn every_a2a_message_parses_with_the_a2a_sdk() {
    let Some(python) = support::python("a2a-sdk") else {
        return;
    };
    let count = support::case_count("SDK_ORACLE_CASES", 400);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/a2a");
    let mut messages = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for path in &files {
        let golden: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        messages.extend(a2a_messages(
            &format!("golden {}", path.display()),
            &golden["output"],
        ));
    }
    let mut conversations = regressions();
    conversations.extend(support::draw(&conversation(), count));
    for c in &conversations {
        let parsed: Conversation = serde_json::from_value(c.clone()).unwrap();
        let text = Format::A2a
            .encode(&parsed, &EncodeOptions::default())
            .unwrap()
            .value;
        messages.extend(a2a_messages(
            &format!("conversation {}", serde_json::to_string(c).unwrap()),
            &serde_json::from_str(&text).unwrap(),
        ));
    }
    let mut input = Vec::new();
    for (id, (_, m)) in messages.iter().enumerate() {
        serde_json::to_writer(&mut input, &json!({"id": id, "message": m})).unwrap();
        input.push(b'\n');
    }
    let output = support::run(
        &python,
        &[A2A_SCRIPT],
        input,
        "the A2A oracle (is a2a-sdk installed?)",
    );
    let verdicts: Vec<Value> = String::from_utf8(output)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(verdicts.len(), messages.len(), "one verdict per message");
    let failures: Vec<String> = messages
        .iter()
        .zip(&verdicts)
        .filter(|(_, v)| v["ok"] != true)
        .map(|((source, m), v)| {
            format!(
                "{source}:\n{}\n--- a2a-sdk: {}",
                serde_json::to_string(m).unwrap(),
                v["error"].as_str().unwrap_or("?")
            )
        })
        .collect();
    println!(
        "a2a-sdk Message: {} of {} valid ({} golden files, {} conversations)",
        messages.len() - failures.len(),
        messages.len(),
        files.len(),
        conversations.len()
    );
    assert!(
        failures.is_empty(),
        "{} A2A messages fail the a2a-sdk; first:\n{}",
        failures.len(),
        failures[..failures.len().min(3)].join("\n\n")
    );
}
