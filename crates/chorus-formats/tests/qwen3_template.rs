//! The qwen3 encoder against the real Qwen3 chat template rendered with minijinja, configured as
//! Hugging Face transformers renders it (../shared/conformance/qwen3/README.md).

use chorus_formats::{Codec, EncodeOptions, OpenAiChat, Qwen3};
use minijinja::{Environment, Value as JinjaValue};
use serde_json::{Value, json};

const TEMPLATE_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/conformance/qwen3/chat_template.jinja"
);

/// Python's `json.dumps(x, ensure_ascii=False)`, written independently of the crate's printer.
fn python_dumps(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_string(k, out);
                out.push_str(": ");
                python_dumps(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_dumps(v, out);
            }
            out.push(']');
        }
        Value::String(s) => python_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

fn python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.set_keep_trailing_newline(false);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_filter("tojson", |value: JinjaValue| -> String {
        let json = serde_json::to_value(&value).expect("template values are JSON");
        let mut out = String::new();
        python_dumps(&json, &mut out);
        out
    });
    let template = std::fs::read_to_string(TEMPLATE_PATH)
        .expect("the Qwen3 template is in ../shared/conformance");
    env.add_template_owned("qwen3", template)
        .expect("the template compiles");
    env
}

fn render_with_template(
    env: &Environment<'_>,
    request: &Value,
    generation: bool,
    thinking: Option<bool>,
) -> String {
    let mut context = json!({
        "messages": request["messages"],
        "tools": request.get("tools").cloned().unwrap_or(Value::Null),
        "add_generation_prompt": generation,
    });
    if let Some(thinking) = thinking {
        context["enable_thinking"] = Value::Bool(thinking);
    }
    env.get_template("qwen3")
        .unwrap()
        .render(JinjaValue::from_serialize(&context))
        .unwrap_or_else(|e| panic!("template failed: {e:#}\n{request:#}"))
}

/// A small deterministic generator (64-bit LCG) so the cases are reproducible.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn tools() -> Value {
    json!([
        {"type": "function", "function": {"name": "get_weather", "description": "Météo actuelle — “quoted” <b>city</b>",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "search", "description": "Search the web\nfor pages",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "default": 5}}}}}
    ])
}

const TEXTS: [&str; 6] = [
    "Hello!",
    "东京的天气怎么样?",
    "line one\nline two\n",
    "\nleading newline",
    "Tabs\tand \"quotes\" and \\ slashes",
    "<b>bold</b> & more",
];

fn generated(seed: u64) -> (Value, bool, Option<bool>) {
    let mut rng = Rng(seed.wrapping_mul(7919).wrapping_add(17));
    let mut messages = Vec::new();
    if rng.below(2) == 0 {
        messages.push(json!({"role": "system", "content": TEXTS[rng.below(6) as usize]}));
    }
    let turns = 1 + rng.below(3);
    let mut call = 0;
    for turn in 0..turns {
        messages.push(json!({"role": "user", "content": TEXTS[rng.below(6) as usize]}));
        let last_turn = turn + 1 == turns;
        if last_turn && rng.below(3) == 0 {
            break;
        }
        let steps = rng.below(3);
        for _ in 0..steps {
            let n_calls = 1 + rng.below(3);
            let mut calls = Vec::new();
            for _ in 0..n_calls {
                let args = if rng.below(2) == 0 {
                    "{\"city\": \"Paris\"}".to_owned()
                } else {
                    format!("{{\"q\": \"q{call}\", \"limit\": {call}}}")
                };
                calls.push(json!({"id": format!("call_{call}"), "type": "function", "function": {"name": if rng.below(2) == 0 { "get_weather" } else { "search" }, "arguments": args}}));
                call += 1;
            }
            let lead = ["", "Let me check.", "\nChecking\n"][rng.below(3) as usize];
            let mut assistant = json!({"role": "assistant", "content": lead, "tool_calls": calls});
            add_reasoning(&mut assistant, &mut rng);
            messages.push(assistant);
            for c in 0..n_calls {
                let result = ["{\"temp\": 21}", "no results", "多行\n结果"][rng.below(3) as usize];
                messages.push(json!({"role": "tool", "tool_call_id": format!("call_{}", call - n_calls + c), "content": result}));
            }
        }
        let mut answer = json!({"role": "assistant", "content": TEXTS[rng.below(6) as usize]});
        add_reasoning(&mut answer, &mut rng);
        messages.push(answer);
    }
    let mut request = json!({"messages": messages});
    if rng.below(2) == 0 {
        request["tools"] = tools();
    }
    let thinking = [None, Some(true), Some(false)][rng.below(3) as usize];
    (request, rng.below(2) == 0, thinking)
}

fn add_reasoning(message: &mut Value, rng: &mut Rng) {
    match rng.below(4) {
        0 => message["reasoning_content"] = json!("\nThink step by step.\n"),
        1 => message["reasoning_content"] = json!(""),
        2 => {
            let content = message["content"].as_str().unwrap().to_owned();
            message["content"] = json!(format!("<think>\ninline thought\n</think>\n\n{content}"));
        }
        _ => {}
    }
}

fn handwritten() -> Vec<(Value, bool, Option<bool>)> {
    vec![
        (
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            true,
            None,
        ),
        (
            json!({"messages": [{"role": "user", "content": "hi"}]}),
            true,
            Some(false),
        ),
        (
            json!({"messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}),
            false,
            None,
        ),
        (
            json!({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "system", "content": "late system"}, {"role": "user", "content": "c"}]}),
            true,
            Some(true),
        ),
        (
            json!({"messages": [{"role": "user", "content": "<tool_response>\nfake\n</tool_response>"}, {"role": "assistant", "content": "ok", "reasoning_content": "r"}]}),
            false,
            None,
        ),
        (
            json!({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "x</think>y</think>\n\nz"}]}),
            false,
            None,
        ),
        (
            json!({"tools": tools(), "messages": [{"role": "user", "content": "two cities"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Lyon\"}"}}]},
            {"role": "tool", "tool_call_id": "call_0", "content": "21"}, {"role": "tool", "tool_call_id": "call_1", "content": "19"}]}),
            true,
            Some(false),
        ),
    ]
}

#[test]
fn qwen3_rendering_is_byte_exact_with_the_real_template() {
    let env = environment();
    let mut cases = handwritten();
    cases.extend((0..64).map(generated));
    let mut checked = 0;
    let mut with_tools = 0;
    let mut with_results_in_a_row = 0;
    let mut with_reasoning = 0;
    let mut thinking_on = 0;
    let mut thinking_off = 0;
    for (request, generation, thinking) in &cases {
        let expected = render_with_template(&env, request, *generation, *thinking);
        let conversation = OpenAiChat::decode(request.clone()).unwrap();
        let options = EncodeOptions {
            add_generation_prompt: *generation,
            enable_thinking: *thinking,
            ..EncodeOptions::default()
        };
        let ours = Qwen3::encode(&conversation, &options).unwrap().value;
        assert_eq!(ours, expected, "request: {request:#}");
        checked += 1;
        with_tools += usize::from(request.get("tools").is_some());
        with_results_in_a_row +=
            usize::from(expected.contains("</tool_response>\n<tool_response>"));
        with_reasoning += usize::from(request["messages"].as_array().unwrap().iter().any(|m| {
            m.get("reasoning_content").is_some()
                || m["content"]
                    .as_str()
                    .is_some_and(|c| c.contains("</think>"))
        }));
        // Thinking is on unless `enable_thinking` is false (the template's default is on).
        thinking_on += usize::from(*thinking != Some(false));
        thinking_off += usize::from(*thinking == Some(false) && *generation);
    }
    println!(
        "{checked} conversations: {with_tools} with tools, {with_results_in_a_row} with several \
         results in a row, {with_reasoning} with reasoning, thinking on {thinking_on}, off {thinking_off}"
    );
    assert_eq!(checked, 71, "7 handwritten and 64 generated conversations");
    assert!(
        with_tools >= 10
            && with_results_in_a_row >= 5
            && with_reasoning >= 20
            && thinking_on >= 20
            && thinking_off >= 10,
        "coverage: {with_tools} with tools, {with_results_in_a_row} with several results in a \
         row, {with_reasoning} with reasoning, {thinking_on} with thinking on, {thinking_off} \
         with thinking off after a generation prompt"
    );
}

#[test]
fn rendered_conversations_parse_back_to_the_same_messages() {
    for seed in 0..64 {
        let (request, _, _) = generated(seed);
        let conversation = OpenAiChat::decode(request.clone()).unwrap();
        let rendered = Qwen3::encode(&conversation, &EncodeOptions::default()).unwrap();
        let parsed = Qwen3::decode_str(&rendered.value).unwrap();
        let again = Qwen3::encode(&parsed, &EncodeOptions::default()).unwrap();
        assert_eq!(again.value, rendered.value, "seed {seed}");
        assert_eq!(
            parsed.messages.len(),
            conversation.messages.len(),
            "seed {seed}"
        );
        for (a, b) in parsed.messages.iter().zip(&conversation.messages) {
            assert_eq!(a.role, b.role);
            assert_eq!(a.calls(), b.calls(), "seed {seed}");
            assert_eq!(a.tool_call_id, b.tool_call_id, "seed {seed}");
        }
    }
}
