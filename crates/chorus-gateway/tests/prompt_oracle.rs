//! The prompt the engine receives is token-exact with openai-harmony 0.0.8 (the Rust core of
//! the `openai_harmony` wheel) rendering the same conversation, over generated multi-turn
//! conversations with instructions, tools, reasoning, preambles, parallel calls and results,
//! sent as a client sends them: OpenAI Chat Completions requests over HTTP to the gateway.
//!
//! The expected Harmony conversation is built here from the generated case by gpt-oss's own
//! conventions, not by chorus's mapping: the system message with effort, cutoff and date; the
//! client's system and developer text as the developer instructions with the tools as the
//! `functions` namespace; reasoning kept only after the last final answer. One `#[test]`: the
//! reference reads its vocabulary through an environment variable set before any thread starts.

mod support;

use openai_harmony::chat::{
    Author, Content, Conversation, DeveloperContent, Message, ReasoningEffort, Role, SystemContent,
    TextContent, ToolDescription,
};
use openai_harmony::{HarmonyEncoding, HarmonyEncodingName, load_harmony_encoding};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

fn reference_encoding() -> HarmonyEncoding {
    let dir = std::env::temp_dir().join(format!("chorus-gateway-vocab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut file =
        std::io::BufWriter::new(std::fs::File::create(dir.join("o200k_base.tiktoken")).unwrap());
    chorus_harmony::encoding()
        .write_tiktoken_file(&mut file)
        .unwrap();
    std::io::Write::flush(&mut file).unwrap();
    drop(file);
    // SAFETY: the only test of this binary sets the variable before it starts any thread.
    unsafe { std::env::set_var("TIKTOKEN_ENCODINGS_BASE", &dir) };
    let loaded =
        load_harmony_encoding(HarmonyEncodingName::HarmonyGptOss).expect("the reference loads");
    std::fs::remove_dir_all(&dir).ok();
    loaded
}

/// A tool call step of the assistant: reasoning, a preamble, one or more calls.
#[derive(Debug, Clone)]
struct Step {
    reasoning: Option<String>,
    preamble: Option<String>,
    calls: Vec<(usize, String, String)>,
}

#[derive(Debug, Clone)]
struct Round {
    user: String,
    steps: Vec<Step>,
    answer: Option<(Option<String>, String)>,
}

#[derive(Debug, Clone)]
struct Case {
    system: Option<String>,
    developer: Option<String>,
    effort: Option<usize>,
    tools: Vec<usize>,
    rounds: Vec<Round>,
}

const TOOL_NAMES: [&str; 4] = ["get_weather", "lookup_order", "send_email", "run_query"];

fn tool_schema(i: usize) -> Value {
    match i {
        0 => {
            json!({"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]})
        }
        1 => {
            json!({"type": "object", "properties": {"order_id": {"type": "integer"}, "fields": {"type": "array", "items": {"type": "string"}}}, "required": ["order_id"]})
        }
        2 => {
            json!({"type": "object", "properties": {"to": {"type": "string"}, "cc": {"type": ["string", "null"]}, "body": {"type": "string", "description": "Plain text"}, "urgent": {"type": "boolean", "default": false}}, "required": ["to", "body"]})
        }
        _ => {
            json!({"type": "object", "properties": {"sql": {"type": "string"}, "limit": {"type": "number", "minimum": 1, "maximum": 1000}, "options": {"type": "object", "properties": {"explain": {"type": "boolean"}}}}})
        }
    }
}

fn tool_description(i: usize) -> &'static str {
    [
        "Current weather of a city.",
        "Look up an order.",
        "Send an e-mail.\nUse sparingly.",
        "Run a read-only SQL query.",
    ][i]
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ,.!?'\"(){}:\\n\u{e9}\u{fc}\u{4e2d}\u{6587}\u{43f}\u{440}\u{438}\u{1f600}-]{1,60}"
        .prop_filter("not blank", |s| !s.trim().is_empty())
}

fn step(tools: Vec<usize>) -> impl Strategy<Value = Step> {
    (
        prop::option::of(text()),
        prop::option::weighted(0.3, text()),
        prop::collection::vec((prop::sample::select(tools), text()), 1..3),
    )
        .prop_map(|(reasoning, preamble, calls)| Step {
            reasoning,
            preamble,
            calls: calls
                .into_iter()
                .map(|(tool, value)| {
                    (
                        tool,
                        TOOL_NAMES[tool].to_string(),
                        json!({"q": value}).to_string(),
                    )
                })
                .collect(),
        })
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::sample::subsequence(vec![0usize, 1, 2, 3], 0..=4),
        1usize..4,
    )
        .prop_flat_map(|(tools, rounds)| {
            let steps = if tools.is_empty() {
                Just(Vec::new()).boxed()
            } else {
                prop::collection::vec(step(tools.clone()), 0..3).boxed()
            };
            let round = (text(), steps, prop::option::of(text()), text()).prop_map(
                |(user, steps, reasoning, answer)| Round {
                    user,
                    steps,
                    answer: Some((reasoning, answer)),
                },
            );
            (
                prop::option::of(text()),
                prop::option::weighted(0.3, text()),
                prop::option::of(0usize..3),
                Just(tools),
                prop::collection::vec(round, rounds),
            )
                .prop_map(|(system, developer, effort, tools, mut rounds)| {
                    if let Some(last) = rounds.last_mut() {
                        last.answer = None;
                    }
                    Case {
                        system,
                        developer,
                        effort,
                        tools,
                        rounds,
                    }
                })
        })
}

/// The Chat Completions request a client sends for the case.
fn request(case: &Case) -> Value {
    let mut messages = Vec::new();
    if let Some(system) = &case.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    if let Some(developer) = &case.developer {
        messages.push(json!({"role": "developer", "content": developer}));
    }
    for (r, round) in case.rounds.iter().enumerate() {
        messages.push(json!({"role": "user", "content": round.user}));
        for (s, step) in round.steps.iter().enumerate() {
            let calls: Vec<Value> = step
                .calls
                .iter()
                .enumerate()
                .map(|(i, (_, name, args))| json!({"id": format!("call_{r}_{s}_{i}"), "type": "function", "function": {"name": name, "arguments": args}}))
                .collect();
            let mut assistant =
                json!({"role": "assistant", "content": step.preamble, "tool_calls": calls});
            if let Some(reasoning) = &step.reasoning {
                assistant["reasoning_content"] = json!(reasoning);
            }
            messages.push(assistant);
            for (i, (_, name, _)) in step.calls.iter().enumerate() {
                messages.push(json!({"role": "tool", "tool_call_id": format!("call_{r}_{s}_{i}"), "content": format!("result of {name} #{i}")}));
            }
        }
        if let Some((reasoning, answer)) = &round.answer {
            let mut assistant = json!({"role": "assistant", "content": answer});
            if let Some(reasoning) = reasoning {
                assistant["reasoning_content"] = json!(reasoning);
            }
            messages.push(assistant);
        }
    }
    let mut body = json!({"model": "gpt-oss", "messages": messages});
    if !case.tools.is_empty() {
        body["tools"] = case
            .tools
            .iter()
            .map(|&t| json!({"type": "function", "function": {"name": TOOL_NAMES[t], "description": tool_description(t), "parameters": tool_schema(t)}}))
            .collect();
    }
    if let Some(effort) = case.effort {
        body["reasoning_effort"] = json!(["low", "medium", "high"][effort]);
    }
    body
}

fn text_message(role: Role, text: &str) -> Message {
    Message::from_role_and_content(
        role,
        Content::Text(TextContent {
            text: text.to_owned(),
        }),
    )
}

/// The Harmony conversation gpt-oss expects for the case.
fn expected(case: &Case) -> Conversation {
    let effort = [
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
    ];
    let mut system = SystemContent::new()
        .with_conversation_start_date("2026-12-02")
        .with_knowledge_cutoff("2024-06");
    if let Some(e) = case.effort {
        system = system.with_reasoning_effort(effort[e]);
    }
    let mut messages = vec![Message::from_role_and_content(Role::System, system)];
    let instructions: Vec<&str> = [&case.system, &case.developer]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .collect();
    if !instructions.is_empty() || !case.tools.is_empty() {
        let mut developer = DeveloperContent::new();
        if !instructions.is_empty() {
            developer = developer.with_instructions(instructions.join("\n\n"));
        }
        if !case.tools.is_empty() {
            developer = developer.with_function_tools(
                case.tools
                    .iter()
                    .map(|&t| {
                        ToolDescription::new(
                            TOOL_NAMES[t],
                            tool_description(t),
                            Some(tool_schema(t)),
                        )
                    })
                    .collect(),
            );
        }
        messages.push(Message::from_role_and_content(Role::Developer, developer));
    }
    let last = case.rounds.len() - 1;
    for (r, round) in case.rounds.iter().enumerate() {
        messages.push(text_message(Role::User, &round.user));
        // Reasoning is kept only after the last final answer: in the last round.
        let keep = r == last;
        for step in &round.steps {
            if let (true, Some(reasoning)) = (keep, &step.reasoning) {
                messages.push(text_message(Role::Assistant, reasoning).with_channel("analysis"));
            }
            if let Some(preamble) = &step.preamble {
                messages.push(text_message(Role::Assistant, preamble).with_channel("commentary"));
            }
            for (_, name, args) in &step.calls {
                messages.push(
                    text_message(Role::Assistant, args)
                        .with_channel("commentary")
                        .with_recipient(format!("functions.{name}"))
                        .with_content_type("<|constrain|>json"),
                );
            }
            for (i, (_, name, _)) in step.calls.iter().enumerate() {
                messages.push(
                    Message::from_author_and_content(
                        Author::new(Role::Tool, format!("functions.{name}")),
                        Content::Text(TextContent {
                            text: format!("result of {name} #{i}"),
                        }),
                    )
                    .with_recipient("assistant")
                    .with_channel("commentary"),
                );
            }
        }
        if let Some((_, answer)) = &round.answer {
            messages.push(text_message(Role::Assistant, answer).with_channel("final"));
        }
    }
    Conversation::from_messages(messages)
}

#[test]
fn prompts_are_token_exact_with_openai_harmony() {
    let reference = reference_encoding();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let stack = runtime.block_on(support::Stack::default());
    let cases: u32 = std::env::var("GATEWAY_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let sent = std::cell::Cell::new(0usize);
    let outcome = runner.run(&case(), |case| {
        let body = request(&case);
        let before = stack.engine.requests().len();
        let status = runtime.block_on(async { stack.chat(&body).await.status() });
        prop_assert_eq!(status.as_u16(), 200, "{}", body);
        let ours = stack.engine.prompt(before);
        let theirs = reference
            .render_conversation_for_completion(&expected(&case), Role::Assistant, None)
            .unwrap();
        if ours != theirs {
            let decode = |t: &[u32]| chorus_harmony::encoding().decode_utf8(t).unwrap();
            prop_assert_eq!(decode(&ours), decode(&theirs), "request {}", body);
            prop_assert_eq!(ours, theirs);
        }
        sent.set(sent.get() + 1);
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    let sent = sent.get();
    println!(
        "{sent} generated conversations: the engine's prompt equals openai-harmony's rendering"
    );
    assert!(sent >= cases as usize);
}
