//! The shipped `chorus gateway` (default settings) in front of an engine that answers at once:
//! what the gateway adds per request, beside what openai_harmony's Python package spends on the
//! same conversation (render for completion + parse of the reply), in the same run.
//!
//! - The conversation: about 10,000 prompt tokens (instructions, four tools, many turns with
//!   calls and results); the reply: reasoning, then an answer, about 400 tokens, streamed by
//!   the engine one token a chunk.
//! - The engine runs in this process and answers every request with the same bytes at once.
//! - Each round sends the same prompt straight to the engine, then through the gateway
//!   (whole, then streamed); the gateway's added latency is its time less the straight one's
//!   median. Its CPU is read from `/proc/PID/stat` of the gateway process before and after.
//! - The anchor runs `benches/gateway_anchor.py` with `CHORUS_TEST_PYTHON` (a python with
//!   openai-harmony, `.ci/python-oracles.txt`), or `python3`; without openai-harmony it says
//!   it did not run.
//!
//! Run: `cargo bench -p chorus-cli --bench gateway` (`GATEWAY_BENCH_ROUNDS`, default 300).

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use chorus_formats::Codec;
use chorus_harmony::chorus_map::to_harmony;
use chorus_harmony::{RenderOptions, SystemContent, encoding, render};
use serde_json::{Value, json};

/// The Chat Completions request of the bench: about 10k tokens.
fn request() -> Value {
    let tools: Vec<Value> = ["get_weather", "lookup_order", "send_email", "run_query"]
        .iter()
        .map(|name| json!({"type": "function", "function": {"name": name, "description": format!("{name}: does what it says, for the bench."), "parameters": {"type": "object", "properties": {"id": {"type": "string", "description": "What to look up"}, "limit": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["id"]}}}))
        .collect();
    let mut messages = vec![
        json!({"role": "system", "content": "You are the support desk of a shop. Be precise and brief. ".repeat(20)}),
    ];
    for turn in 0..58 {
        messages.push(json!({"role": "user", "content": format!("Question {turn}: where is my order {turn}, and what will the weather be when it arrives? I ordered it last week and it still has not shipped. ")}));
        let id = format!("call_{turn}");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "lookup_order", "arguments": format!("{{\"id\":\"{turn}\",\"limit\":3}}")}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": format!("{{\"order\": {turn}, \"status\": \"packed\", \"carrier\": \"DHL\", \"eta\": \"2026-12-0{}\", \"items\": [\"book\", \"lamp\", \"cable\"]}}", turn % 9 + 1)}));
        messages.push(json!({"role": "assistant", "content": format!("Your order {turn} is packed and ships with DHL; it should arrive in a few days. The weather then looks dry and mild, so the parcel will be fine on the doorstep. ")}));
    }
    messages.push(json!({"role": "user", "content": "Thanks. One more: summarise all my orders."}));
    json!({"model": "gpt-oss", "messages": messages, "tools": tools})
}

/// The reply the engine sends: reasoning, then an answer.
fn reply_text() -> String {
    format!(
        "<|channel|>analysis<|message|>{}<|end|><|start|>assistant<|channel|>final<|message|>{}",
        "The user wants a summary of forty orders; each is packed and ships with DHL. ".repeat(12),
        "All forty orders are packed and ship with DHL; they arrive within the week. ".repeat(8)
    )
}

/// The engine's SSE body: one chunk per token, its text as vLLM streams it.
fn engine_body(reply: &[u32]) -> String {
    let mut out = String::new();
    for &id in reply {
        let text = String::from_utf8_lossy(encoding().token_bytes(id).unwrap()).into_owned();
        out.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "text": text, "finish_reason": null}]})
        ));
    }
    out.push_str(&format!("data: {}\n\n", json!({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": reply.len(), "total_tokens": 1 + reply.len()}})));
    out.push_str("data: [DONE]\n\n");
    out
}

fn start_engine(body: String) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let body: &'static str = Box::leak(body.into_boxed_str());
            let app = Router::new().route(
                "/v1/completions",
                post(move || async move { ([("content-type", "text/event-stream")], body) }),
            );
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{address}")
}

struct Gateway {
    child: Child,
    addr: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_gateway(engine: &str) -> Gateway {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chorus"))
        .args([
            "gateway",
            "--listen",
            "127.0.0.1:0",
            "--model",
            "gpt-oss",
            "--upstream",
        ])
        .arg(format!("{engine}/v1"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chorus gateway");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    std::thread::spawn(move || lines.for_each(drop));
    Gateway { child, addr }
}

/// CPU seconds (user + system) the process has used.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of stat (utime, stime), counted from after the command name.
    let ticks: f64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|v| v.parse::<f64>().ok()).sum())
        .unwrap_or(0.0);
    // SAFETY: sysconf only reads a constant of the system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// The anchor's CPU seconds per request (render + parse), median, or why it did not run.
fn anchor(conversation_json: &str, reply: &[u32], iterations: usize) -> Result<f64, String> {
    let python = std::env::var("CHORUS_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut vocabulary =
        std::fs::File::create(dir.path().join("o200k_base.tiktoken")).map_err(|e| e.to_string())?;
    encoding()
        .write_tiktoken_file(&mut vocabulary)
        .map_err(|e| e.to_string())?;
    let conversation = dir.path().join("conversation.json");
    std::fs::write(&conversation, conversation_json).map_err(|e| e.to_string())?;
    let reply_path = dir.path().join("reply.json");
    std::fs::write(&reply_path, serde_json::to_string(reply).unwrap())
        .map_err(|e| e.to_string())?;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/gateway_anchor.py");
    let output = Command::new(&python)
        .arg(script)
        .arg(&conversation)
        .arg(&reply_path)
        .arg(iterations.to_string())
        .env("TIKTOKEN_ENCODINGS_BASE", dir.path())
        .output()
        .map_err(|e| format!("{python}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{python} could not run the anchor: {}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ));
    }
    let mut times: Vec<f64> = serde_json::from_slice(&output.stdout).map_err(|e| e.to_string())?;
    Ok(quantile(&mut times, 0.5))
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("gateway: bench");
        return;
    }
    let rounds: usize = std::env::var("GATEWAY_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let request = request();
    let conversation = chorus_formats::OpenAiChat::decode(request.clone()).unwrap();
    let system = SystemContent {
        conversation_start_date: Some(chrono::Utc::now().format("%Y-%m-%d").to_string()),
        ..SystemContent::default()
    };
    let harmony = to_harmony(&conversation, system).conversation;
    let prompt = render(&harmony, &RenderOptions::default()).unwrap();
    let reply = encoding().encode_with_special_tokens(&reply_text());
    println!(
        "gateway bench: prompt {} tokens, reply {} tokens, {rounds} rounds",
        prompt.len(),
        reply.len()
    );

    let engine = start_engine(engine_body(&reply));
    let gateway = start_gateway(&engine);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    let direct_body = json!({"model": "gpt-oss", "prompt": prompt, "stream": true});
    let mut stream_request = request.clone();
    stream_request["stream"] = json!(true);
    let timed = |url: String, body: &Value| {
        let started = Instant::now();
        let text = runtime.block_on(async {
            http.post(url)
                .json(body)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        });
        (started.elapsed().as_secs_f64(), text)
    };
    let engine_url = format!("{engine}/v1/completions");
    let chat_url = format!("http://{}/v1/chat/completions", gateway.addr);
    // Warm up, and check the answer is the reply.
    for _ in 0..20 {
        timed(engine_url.clone(), &direct_body);
        let (_, text) = timed(chat_url.clone(), &request);
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert!(
            answer["choices"][0]["message"]["content"]
                .as_str()
                .unwrap()
                .starts_with("All forty orders"),
            "{text}"
        );
    }
    let pid = gateway.child.id();
    let (mut direct, mut whole, mut streamed) = (Vec::new(), Vec::new(), Vec::new());
    let mut cpu_whole = 0.0;
    let mut cpu_stream = 0.0;
    for _ in 0..rounds {
        direct.push(timed(engine_url.clone(), &direct_body).0);
        let before = cpu_seconds(pid);
        whole.push(timed(chat_url.clone(), &request).0);
        let middle = cpu_seconds(pid);
        streamed.push(timed(chat_url.clone(), &stream_request).0);
        cpu_whole += middle - before;
        cpu_stream += cpu_seconds(pid) - middle;
    }
    let base = quantile(&mut direct.clone(), 0.5);
    let mut added_whole: Vec<f64> = whole.iter().map(|t| t - base).collect();
    let mut added_stream: Vec<f64> = streamed.iter().map(|t| t - base).collect();
    let ms = |s: f64| s * 1000.0;
    let cpu_whole = cpu_whole / rounds as f64;
    let cpu_stream = cpu_stream / rounds as f64;
    println!("engine alone: median {:.3} ms", ms(base));
    println!(
        "gateway, whole:    added median {:.3} ms, p99 {:.3} ms; CPU {:.3} ms a request",
        ms(quantile(&mut added_whole, 0.5)),
        ms(quantile(&mut added_whole, 0.99)),
        ms(cpu_whole)
    );
    println!(
        "gateway, streamed: added median {:.3} ms, p99 {:.3} ms; CPU {:.3} ms a request, {:.2} µs a streamed token",
        ms(quantile(&mut added_stream, 0.5)),
        ms(quantile(&mut added_stream, 0.99)),
        ms(cpu_stream),
        cpu_stream * 1e6 / reply.len() as f64
    );
    let json = serde_json::to_string(&harmony).unwrap();
    match anchor(&json, &reply, 50) {
        Ok(python) => println!(
            "openai_harmony (Python) render + parse: CPU {:.3} ms a request; ratio to the gateway's whole request: {:.1}x",
            ms(python),
            python / cpu_whole
        ),
        Err(why) => println!("openai_harmony anchor not run: {why}"),
    }
    std::thread::sleep(Duration::from_millis(10));
}
