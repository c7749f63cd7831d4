//! `--to qwen3` against the real Qwen3 chat template rendered by Python `jinja2` as Hugging Face
//! `transformers` renders it (tests/oracle/qwen3_render.py), over conversations generated afresh
//! on every run in the shapes `transformers` and Ollama take: calls with and without ids, in the
//! `function` wrapper or flat, arguments as JSON text or as objects with any key order and
//! numbers, Ollama's `tool_name`, reasoning, several results in a row, Unicode names, and tool
//! definitions wrapped or flat with their keys in any order (the template prints them as given).
//!
//! Python comes from `CHORUS_TEST_PYTHON` (with `jinja2`); unset, the test says it did not run.
//! Run alone: `CHORUS_TEST_PYTHON=.../bin/python cargo test -p chorus-formats --test qwen3_oracle
//! -- --nocapture`; `QWEN3_ORACLE_CASES` changes the number of generated cases (default 1200).
//! A case that once disagreed is kept in tests/qwen3_oracle.regressions.jsonl and runs first.

use chorus_formats::{EncodeOptions, Format};
mod support;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

const TEMPLATE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/qwen3/chat_template.jinja"
);
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/oracle/qwen3_render.py");
const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/qwen3_oracle.regressions.jsonl"
);

const TEXTS: [&str; 10] = [
    "Hello!",
    "东京的天气怎么样?",
    "Привет, как дела?",
    "line one\nline two\n",
    "\nleading newline",
    "Tabs\tand \"quotes\" and \\ slashes",
    "<b>bold</b> & more 🎉",
    "<tool_response>\nlooks like a result\n</tool_response>",
    "",
    "ends with think</think>\n\nanswer",
];
const NAMES: [&str; 6] = [
    "get_weather",
    "search",
    "未来天气",
    "поиск",
    "zoë",
    "emoji_🎲",
];
const KEYS: [&str; 7] = ["city", "q", "limit", "単位", "ключ", "nested", "x y"];

fn text() -> impl Strategy<Value = String> {
    prop::sample::select(&TEXTS[..]).prop_map(str::to_owned)
}

/// Numbers in every JSON form Python and serde read alike.
fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i32>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(vec![
            0.5,
            1e-7,
            1e16,
            1e15,
            1e21,
            123.456,
            -0.0,
            2.0,
            1e-5,
            0.0001,
            3.14159e300
        ])
        .prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
    ]
}

/// A JSON value with keys in the drawn order.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        number(),
        text().prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            object_of(inner),
        ]
    })
}

fn object_of(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(&KEYS[..]), values), 0..4).prop_map(|pairs| {
        let mut map = Map::new();
        for (k, v) in pairs {
            map.insert(k.to_owned(), v);
        }
        Value::Object(map)
    })
}

/// Arguments as an object, as JSON text (spacing kept), or as text that is not JSON.
fn arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => object_of(json_value()),
        2 => object_of(json_value()).prop_map(|v| Value::String(v.to_string())),
        1 => Just(json!("{\"city\":  \"Paris\" }")),
        1 => Just(json!("not json at all")),
    ]
}

/// One call in a shape some client sends; `with_id` says whether it carries an id.
fn call(k: usize) -> impl Strategy<Value = Value> {
    (
        prop::sample::select(&NAMES[..]),
        arguments(),
        0..4u8,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(move |(name, arguments, shape, with_id, id_last)| {
            let function = json!({"name": name, "arguments": arguments});
            let mut call = match shape {
                // Chat Completions.
                0 => json!({"type": "function", "function": function}),
                // Ollama: no id, no type, an index inside the function.
                1 => json!({"function": {"index": k, "name": name, "arguments": function["arguments"]}}),
                // transformers' documented flat form.
                2 => function,
                _ => json!({"function": function, "type": "function"}),
            };
            if with_id && shape != 1 {
                let id = json!(format!("tc-{k}-{name}"));
                let map = call.as_object_mut().unwrap();
                if id_last {
                    map.insert("id".into(), id);
                } else {
                    map.shift_insert(0, "id".into(), id);
                }
            }
            call
        })
}

/// Reasoning as `reasoning_content` (text, empty, null) or inline `<think>`, or none.
fn with_reasoning(message: Value) -> impl Strategy<Value = Value> {
    (0..5u8, text()).prop_map(move |(how, thought)| {
        let mut m = message.clone();
        match how {
            0 => m["reasoning_content"] = json!(format!("\n{thought}\n")),
            1 => m["reasoning_content"] = json!(""),
            2 => m["reasoning_content"] = Value::Null,
            3 => {
                let content = m["content"].as_str().unwrap_or_default().to_owned();
                m["content"] = json!(format!("<think>\n{thought}\n</think>\n\n{content}"));
            }
            _ => {}
        }
        m
    })
}

/// An assistant turn with 1-3 calls and one result per call, in the call shapes above.
fn tool_step() -> impl Strategy<Value = Vec<Value>> {
    (
        prop::collection::vec(0..3usize, 1..4),
        prop::sample::select(vec!["", "Let me check.", "\nChecking\n"]),
        prop::collection::vec((text(), 0..4u8), 3),
        any::<bool>(),
    )
        .prop_flat_map(|(slots, lead, results, ids_on_results)| {
            let calls: Vec<_> = slots.iter().enumerate().map(|(k, _)| call(k)).collect();
            (calls, Just(lead), Just(results), Just(ids_on_results))
        })
        .prop_flat_map(|(calls, lead, results, ids_on_results)| {
            let mut messages = Vec::new();
            for (k, c) in calls.iter().enumerate() {
                let (content, how) = &results[k % results.len()];
                let name = c
                    .get("function")
                    .unwrap_or(c)
                    .get("name")
                    .cloned()
                    .unwrap_or_default();
                let mut m = json!({"role": "tool", "content": content});
                match (how, c.get("id")) {
                    (_, Some(id)) if ids_on_results => m["tool_call_id"] = id.clone(),
                    (0, _) => m["tool_name"] = name,
                    (1, _) => m["name"] = name,
                    _ => {}
                }
                messages.push(m);
            }
            let assistant = json!({"role": "assistant", "content": lead, "tool_calls": calls});
            (with_reasoning(assistant), Just(messages))
        })
        .prop_map(|(assistant, results)| {
            let mut out = vec![assistant];
            out.extend(results);
            out
        })
}

/// A tool definition in a shape clients send: wrapped in `{type, function}` (either order, or
/// without `type`) or flat as transformers and Ollama take it (with or without `type`), its keys
/// and its schema's keys in a drawn order, a description that may be `null`.
fn tool_definition() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(&NAMES[..]),
        prop::option::of(prop_oneof![4 => text().prop_map(Value::String), 1 => Just(Value::Null)]),
        object_of(json_value()),
        prop::option::of(any::<bool>()),
        prop::option::of(json_value()),
        0..5u8,
    )
        .prop_flat_map(|(name, description, properties, strict, returns, shape)| {
            let schema = vec![
                ("type", json!("object")),
                ("properties", properties),
                ("required", json!(["city"])),
            ];
            let mut fields = vec![("name", json!(name))];
            fields.extend(description.map(|d| ("description", d)));
            fields.push(("parameters", Value::Null));
            fields.extend(strict.map(|s| ("strict", json!(s))));
            fields.extend(returns.map(|r| ("return", r)));
            if shape == 4 {
                fields.push(("type", json!("function")));
            }
            (
                Just(fields).prop_shuffle(),
                Just(schema).prop_shuffle(),
                Just(shape),
            )
        })
        .prop_map(|(fields, schema, shape)| {
            let mut function = Map::new();
            for (key, value) in fields {
                let value = match key {
                    "parameters" => object(&schema),
                    _ => value,
                };
                function.insert(key.to_owned(), value);
            }
            match shape {
                0 => json!({"type": "function", "function": function}),
                1 => json!({"function": function, "type": "function"}),
                2 => json!({"function": function}),
                // Flat, with `type` among the fields (4) or without it (3).
                _ => Value::Object(function),
            }
        })
}

fn object(pairs: &[(&str, Value)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

/// One user turn and what follows it: tool steps, then maybe an answer.
fn turn() -> impl Strategy<Value = Vec<Value>> {
    (
        text(),
        prop::collection::vec(tool_step(), 0..3),
        prop::option::weighted(0.8, text()),
        prop::option::weighted(0.1, text()),
    )
        .prop_flat_map(|(query, steps, answer, late_system)| {
            let answer = match answer {
                Some(a) => with_reasoning(json!({"role": "assistant", "content": a}))
                    .prop_map(Some)
                    .boxed(),
                None => Just(None).boxed(),
            };
            (Just(query), Just(steps), answer, Just(late_system))
        })
        .prop_map(|(query, steps, answer, late_system)| {
            let mut out = Vec::new();
            if let Some(s) = late_system {
                out.push(json!({"role": "system", "content": s}));
            }
            out.push(json!({"role": "user", "content": query}));
            out.extend(steps.into_iter().flatten());
            out.extend(answer);
            out
        })
}

fn case() -> impl Strategy<Value = Value> {
    (
        prop::option::of(text()),
        prop::collection::vec(turn(), 1..4),
        prop::option::weighted(0.5, prop::collection::vec(tool_definition(), 0..3)),
        any::<bool>(),
        prop::option::of(any::<bool>()),
        prop::option::weighted(0.05, text()),
    )
        .prop_map(|(system, turns, tools, generation, thinking, developer)| {
            let mut messages = Vec::new();
            if let Some(s) = system {
                messages.push(json!({"role": "system", "content": s}));
            }
            if let Some(d) = developer {
                messages.push(json!({"role": "developer", "content": d}));
            }
            messages.extend(turns.into_iter().flatten());
            let mut case = json!({"messages": messages, "add_generation_prompt": generation});
            if let Some(tools) = tools {
                case["tools"] = Value::Array(tools);
            }
            if let Some(thinking) = thinking {
                case["enable_thinking"] = Value::Bool(thinking);
            }
            case
        })
}

/// The real template's text for each case (or its refusal), from one Python process.
fn oracle(python: &str, cases: &[Value]) -> Vec<Result<String, String>> {
    let input = serde_json::to_vec(cases).unwrap();
    let output = support::run(python, &[SCRIPT, TEMPLATE], input, "the jinja2 oracle");
    let rendered: Vec<Value> = serde_json::from_slice(&output).unwrap();
    rendered
        .into_iter()
        .map(|r| match r.get("text").and_then(Value::as_str) {
            Some(text) => Ok(text.to_owned()),
            None => Err(r["error"].as_str().unwrap_or("?").to_owned()),
        })
        .collect()
}

/// Ours: the request decoded as openai-chat and encoded as qwen3.
fn ours(case: &Value) -> String {
    let mut request = Map::new();
    request.insert("messages".into(), case["messages"].clone());
    if let Some(tools) = case.get("tools") {
        request.insert("tools".into(), tools.clone());
    }
    let text = serde_json::to_string(&request).unwrap();
    let conversation = Format::OpenAiChat
        .decode(&text)
        .unwrap_or_else(|e| panic!("openai-chat refuses {text}: {e}"));
    let options = EncodeOptions {
        add_generation_prompt: case["add_generation_prompt"].as_bool().unwrap_or(false),
        enable_thinking: case.get("enable_thinking").and_then(Value::as_bool),
        ..EncodeOptions::default()
    };
    Format::Qwen3.encode(&conversation, &options).unwrap().value
}

fn regressions() -> Vec<Value> {
    support::kept(REGRESSIONS)
}

#[test]
fn qwen3_is_byte_exact_with_the_template_rendered_by_jinja2() {
    let Some(python) = support::python("jinja2") else {
        return;
    };
    let count = support::case_count("QWEN3_ORACLE_CASES", 1200);
    let mut cases = regressions();
    let kept = cases.len();
    cases.extend(support::draw(&case(), count));
    let expected = oracle(&python, &cases);
    assert_eq!(expected.len(), cases.len());
    let (mut exact, mut refused) = (0, 0);
    let mut failures = Vec::new();
    for (case, expected) in cases.iter().zip(expected) {
        match expected {
            Ok(text) => {
                let ours = ours(case);
                if ours == text {
                    exact += 1;
                } else {
                    failures.push(format!(
                        "case: {}\n--- template\n{text}\n--- ours\n{ours}",
                        serde_json::to_string(case).unwrap()
                    ));
                }
            }
            Err(_) => refused += 1,
        }
    }
    let compared = cases.len() - refused;
    println!(
        "qwen3 vs jinja2: {exact} of {compared} byte-exact ({kept} kept regressions, {count} \
         generated; {refused} the template refuses, not compared)"
    );
    let coverage = Coverage::of(&cases);
    println!("{coverage:?}");
    coverage.check();
    assert!(
        failures.is_empty(),
        "{} of {compared} differ; first:\n{}",
        failures.len(),
        failures[0]
    );
    assert!(exact >= 1000, "only {exact} cases compared");
}

/// How many cases show each shape the generator is meant to produce.
#[derive(Debug, Default)]
struct Coverage {
    with_tools: usize,
    calls_without_id: usize,
    calls_with_id: usize,
    flat_calls: usize,
    object_arguments: usize,
    float_arguments: usize,
    ollama_tool_name: usize,
    results_in_a_row: usize,
    reasoning_content: usize,
    inline_think: usize,
    thinking_off: usize,
    thinking_on: usize,
    generation_prompt: usize,
    unicode_names: usize,
    flat_tools: usize,
    wrapped_tools_type_last: usize,
    tools_name_not_first: usize,
    null_descriptions: usize,
}

impl Coverage {
    fn of(cases: &[Value]) -> Self {
        let mut c = Coverage::default();
        for case in cases {
            let messages = case["messages"].as_array().unwrap();
            let calls: Vec<&Value> = messages
                .iter()
                .filter_map(|m| m["tool_calls"].as_array())
                .flatten()
                .collect();
            let any = |f: &dyn Fn(&Value) -> bool| usize::from(calls.iter().any(|c| f(c)));
            let function = |c: &Value| c.get("function").cloned().unwrap_or_else(|| c.clone());
            let tools: &[Value] = case["tools"].as_array().map_or(&[], Vec::as_slice);
            let any_tool = |f: &dyn Fn(&Map<String, Value>) -> bool| {
                usize::from(tools.iter().any(|t| f(t.as_object().unwrap())))
            };
            let signature = |t: &Map<String, Value>| {
                t.get("function")
                    .and_then(Value::as_object)
                    .unwrap_or(t)
                    .clone()
            };
            c.with_tools += usize::from(!tools.is_empty());
            c.flat_tools += any_tool(&|t| !t.contains_key("function"));
            c.wrapped_tools_type_last += any_tool(&|t| {
                t.contains_key("function") && t.keys().next_back().is_some_and(|k| k == "type")
            });
            c.tools_name_not_first +=
                any_tool(&|t| signature(t).keys().next().is_some_and(|k| k != "name"));
            c.null_descriptions +=
                any_tool(&|t| signature(t).get("description") == Some(&Value::Null));
            c.calls_without_id += any(&|c| c.get("id").is_none());
            c.calls_with_id += any(&|c| c.get("id").is_some());
            c.flat_calls += any(&|c| c.get("function").is_none());
            c.object_arguments += any(&|c| function(c)["arguments"].is_object());
            c.float_arguments += any(&|c| function(c)["arguments"].to_string().contains('.'));
            c.unicode_names += any(&|c| !function(c)["name"].as_str().unwrap().is_ascii());
            c.ollama_tool_name +=
                usize::from(messages.iter().any(|m| m.get("tool_name").is_some()));
            c.results_in_a_row += usize::from(
                messages
                    .windows(2)
                    .any(|w| w[0]["role"] == "tool" && w[1]["role"] == "tool"),
            );
            c.reasoning_content +=
                usize::from(messages.iter().any(|m| m["reasoning_content"].is_string()));
            c.inline_think += usize::from(messages.iter().any(|m| {
                m["role"] == "assistant"
                    && m["content"].as_str().is_some_and(|t| t.contains("<think>"))
            }));
            c.thinking_off += usize::from(case["enable_thinking"] == false);
            c.thinking_on += usize::from(case["enable_thinking"] != false);
            c.generation_prompt += usize::from(case["add_generation_prompt"] == true);
        }
        c
    }

    /// Each shape turns up in at least a few per cent of the cases.
    fn check(&self) {
        let counts = [
            self.with_tools,
            self.calls_without_id,
            self.calls_with_id,
            self.flat_calls,
            self.object_arguments,
            self.float_arguments,
            self.ollama_tool_name,
            self.results_in_a_row,
            self.reasoning_content,
            self.inline_think,
            self.thinking_off,
            self.thinking_on,
            self.generation_prompt,
            self.unicode_names,
            self.flat_tools,
            self.wrapped_tools_type_last,
            self.tools_name_not_first,
            self.null_descriptions,
        ];
        assert!(
            counts.iter().all(|&n| n >= 30),
            "too few cases of a shape: {self:?}"
        );
    }
}
