//! `chorus gateway`, the shipped binary: its refusals of bad settings, and the official openai
//! Python SDK as its client (Chat Completions and Responses) against a fake raw completions engine (the gateway renders the
//! Harmony prompt; the engine answers by what the prompt holds).
//!
//! The SDK test needs `CHORUS_TEST_PYTHON` (a python with `openai`, as `.ci/run` sets it);
//! without it the test says "not run".

mod common;

use std::process::Command;

use axum::Router;
use axum::routing::post;
use common::{Served, chorus, code, python_with, repo, stderr, stdout};
use serde_json::{Value, json};

/// A raw completions engine that answers gpt-oss's way: a weather question with a call, a
/// weather result with the answer, anything else with a greeting; each after its reasoning.
async fn engine(body: String) -> ([(&'static str, &'static str); 1], String) {
    let request: Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<u32> = request["prompt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let prompt = chorus_harmony::encoding().decode_utf8(&ids).unwrap();
    let reply: String = if prompt.contains("type get_time") {
        agent_step(&prompt)
    } else if prompt.contains("<|start|>functions.get_weather to=assistant") {
        "<|channel|>analysis<|message|>The tool says sunny.<|end|><|start|>assistant<|channel|>final<|message|>It is sunny in Paris, 21 °C.".into()
    } else if prompt.contains("weather") {
        "<|channel|>analysis<|message|>Need the weather tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}".into()
    } else {
        "<|channel|>analysis<|message|>A greeting.<|end|><|start|>assistant<|channel|>final<|message|>Hello! How can I help?".into()
    };
    let mut sse = String::new();
    let chars: Vec<char> = reply.chars().collect();
    for piece in chars.chunks(4) {
        let text: String = piece.iter().collect();
        sse.push_str(&format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "text": text, "finish_reason": null}]})
        ));
    }
    sse.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]})
    ));
    sse.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], sse)
}

/// The agent's loop with two tools: weather first, then time, then the answer quoting both
/// results as the prompt holds them.
fn agent_step(prompt: &str) -> String {
    let result = |tool: &str| {
        let header =
            format!("<|start|>functions.{tool} to=assistant<|channel|>commentary<|message|>");
        let from = prompt.rfind(&header)? + header.len();
        let to = prompt[from..].find("<|end|>")? + from;
        Some(prompt[from..to].to_owned())
    };
    let call = |tool: &str| {
        format!(
            "<|channel|>analysis<|message|>Need {tool}.<|end|><|start|>assistant<|channel|>commentary to=functions.{tool} <|constrain|>json<|message|>{{\"city\":\"Paris\"}}"
        )
    };
    match (result("get_weather"), result("get_time")) {
        (None, _) => call("get_weather"),
        (Some(_), None) => call("get_time"),
        (Some(weather), Some(time)) => format!(
            "<|channel|>analysis<|message|>Both known.<|end|><|start|>assistant<|channel|>final<|message|>Weather: {weather}; time: {time}."
        ),
    }
}

fn start_engine() -> String {
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
            let app = Router::new().route("/v1/completions", post(engine));
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{address}/v1")
}

#[test]
fn bad_settings_are_refused_with_a_hint() {
    let none = chorus(&["gateway"], "");
    assert_eq!(code(&none), 2);
    assert!(stderr(&none).contains("--upstream"), "{}", stderr(&none));
    let ftp = chorus(&["gateway", "--upstream", "ftp://x"], "");
    assert_eq!(code(&ftp), 2);
    assert!(stderr(&ftp).contains("scheme"), "{}", stderr(&ftp));
    let port = chorus(
        &["gateway", "--upstream", "http://x/v1", "--listen", "8080"],
        "",
    );
    assert_eq!(code(&port), 2);
    assert!(stderr(&port).contains("HOST:PORT"), "{}", stderr(&port));

    let dir = tempfile::tempdir().unwrap();
    let no_section = dir.path().join("hub.toml");
    std::fs::write(&no_section, "[limits]\n").unwrap();
    let refused = chorus(&["gateway", "--config", no_section.to_str().unwrap()], "");
    assert_eq!(code(&refused), 2);
    assert!(
        stderr(&refused).contains("no [gateway] section"),
        "{}",
        stderr(&refused)
    );
    let typo = dir.path().join("typo.toml");
    std::fs::write(&typo, "[gateway]\nupstrem = \"http://x/v1\"\n").unwrap();
    let refused = chorus(&["gateway", "--config", typo.to_str().unwrap()], "");
    assert_eq!(code(&refused), 2);
    assert!(stderr(&refused).contains("upstrem"), "{}", stderr(&refused));

    let hashed = chorus(&["gateway", "--hash-key", "-"], "sk-test\n");
    assert_eq!(code(&hashed), 0, "{}", stderr(&hashed));
    assert_eq!(stdout(&hashed).trim(), chorus_gateway::hash_key("sk-test"));
}

#[test]
fn the_openai_sdk_runs_a_tool_loop_through_the_gateway() {
    let Some(python) = python_with("the official openai SDK", "openai") else {
        return;
    };
    let upstream = start_engine();
    let dir = tempfile::tempdir().unwrap();
    let mut gateway = Served::gateway(
        dir.path(),
        &["--upstream", &upstream, "--model", "gpt-oss-20b"],
    );
    gateway.keep_reading();
    let output = Command::new(python)
        .arg(repo().join("crates/chorus-cli/tests/python/gateway_openai_sdk.py"))
        .arg(format!("http://{}/v1", gateway.addr))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["hello"]["content"], "Hello! How can I help?");
    assert_eq!(seen["hello"]["reasoning"], "A greeting.");
    assert_eq!(seen["hello"]["finish"], "stop");
    assert!(seen["hello"]["reasoning_tokens"].as_u64().unwrap() > 0);
    assert_eq!(seen["hello_stream"]["content"], seen["hello"]["content"]);
    assert_eq!(
        seen["hello_stream"]["reasoning"],
        seen["hello"]["reasoning"]
    );
    assert!(
        seen["hello_stream"]["usage"]["prompt_tokens"]
            .as_u64()
            .unwrap()
            > 10
    );
    assert_eq!(seen["call"]["name"], "get_weather");
    assert_eq!(seen["call"]["arguments"], json!({"city": "Paris"}));
    assert_eq!(seen["call"]["finish"], "tool_calls");
    assert!(seen["call"]["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(seen["call_stream"]["calls"][0]["name"], "get_weather");
    assert_eq!(
        seen["call_stream"]["calls"][0]["arguments"],
        "{\"city\":\"Paris\"}"
    );
    assert_eq!(seen["call_stream"]["finish"], "tool_calls");
    assert_eq!(seen["answer"], "It is sunny in Paris, 21 °C.");
    let hello = "Hello! How can I help?";
    assert_eq!(
        seen["choices"],
        json!([[0, hello, "stop"], [1, hello, "stop"]])
    );
    assert_eq!(
        seen["choices_stream"],
        json!({"0": {"content": hello, "finish": "stop"}, "1": {"content": hello, "finish": "stop"}})
    );
    assert_eq!(
        seen["bad_request"],
        json!({"status": 400, "param": "/n", "code": "invalid_value"})
    );
    assert_eq!(
        seen["not_found"],
        json!({"status": 404, "code": "model_not_found"})
    );
    assert_eq!(seen["models"], json!(["gpt-oss-20b"]));
    let responses = &seen["responses"];
    assert_eq!(responses["first_text"], "Hello! How can I help?");
    assert_eq!(responses["first_types"], json!(["reasoning", "message"]));
    assert_eq!(responses["second_text"], "Hello! How can I help?");
    assert_eq!(responses["second_previous"], true);
    assert_eq!(responses["retrieved"], true);
    assert_eq!(responses["deleted"], true);
    assert_eq!(responses["stream_text"], "Hello! How can I help?");
    let types = responses["stream_types"].as_array().unwrap();
    assert_eq!(types.first().unwrap(), "response.created");
    assert_eq!(types.last().unwrap(), "response.completed");
    assert_eq!(
        responses["call"],
        json!({"name": "get_weather", "arguments": {"city": "Paris"}})
    );
    assert_eq!(responses["answer"], "It is sunny in Paris, 21 °C.");
    let status = gateway.stop();
    assert!(
        status.success(),
        "chorus gateway ends cleanly on SIGTERM: {status}"
    );
}

#[test]
fn the_agents_sdk_runs_a_tool_loop_over_both_apis() {
    let Some(python) = python_with("the OpenAI Agents SDK", "agents") else {
        return;
    };
    let upstream = start_engine();
    let dir = tempfile::tempdir().unwrap();
    let mut gateway = Served::gateway(
        dir.path(),
        &["--upstream", &upstream, "--model", "gpt-oss-20b"],
    );
    gateway.keep_reading();
    let output = Command::new(python)
        .arg(repo().join("crates/chorus-cli/tests/python/gateway_agents_sdk.py"))
        .arg(format!("http://{}/v1", gateway.addr))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    for api in ["chat", "responses"] {
        let run = &seen[api];
        assert_eq!(
            run["calls"],
            json!([["get_weather", "Paris"], ["get_time", "Paris"]]),
            "{api}: {run}"
        );
        assert_eq!(
            run["final"], "Weather: sunny in Paris; time: noon in Paris.",
            "{api}: {run}"
        );
        assert_eq!(run["model_turns"], 3, "{api}: {run}");
    }
    gateway.stop();
}

#[test]
fn chorus_serve_carries_a_gateway_section() {
    let upstream = start_engine();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("chorus.toml");
    std::fs::write(
        &config,
        format!("[gateway]\nupstream = \"{upstream}\"\nmodel = \"gpt-oss-20b\"\nlisten = \"127.0.0.1:0\"\n"),
    )
    .unwrap();
    let mut served = Served::start(
        dir.path(),
        &["--store", "memory", "--config", config.to_str().unwrap()],
        std::process::Stdio::inherit(),
    );
    let line = served.next_line();
    let line = if line.contains("admin token") {
        served.next_line()
    } else {
        line
    };
    let gateway = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no gateway address in {line:?}"))
        .to_owned();
    served.keep_reading();
    let (status, body) = common::request(
        &gateway,
        "POST",
        "/v1/chat/completions",
        "none",
        Some(&json!({"model": "gpt-oss-20b", "messages": [{"role": "user", "content": "Hello"}]})),
    );
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        "Hello! How can I help?"
    );
    // The hub still answers beside it.
    let (status, _) = common::request(&served.addr, "GET", "/healthz", "none", None);
    assert_eq!(status, 200);
    assert!(served.stop().success());

    // A bad [gateway] is refused at start, naming the section.
    std::fs::write(&config, "[gateway]\nupstream = \"ftp://x\"\n").unwrap();
    let refused = chorus(
        &[
            "serve",
            "--store",
            "memory",
            "--listen",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(code(&refused), 2);
    assert!(
        stderr(&refused).contains("[gateway]"),
        "{}",
        stderr(&refused)
    );
}
