//! `POST /v1/chat/completions` end to end over HTTP, against a scripted fake engine: what the
//! client gets for each shape of model output (clean, damaged, unreadable), streamed and not;
//! what the engine is sent; and every refusal in OpenAI's error shape.

mod support;

use serde_json::{Value, json};
use support::{Answer, Stack, config};

const WEATHER_TOOL: &str = r#"{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}"#;

fn ask(text: &str) -> Value {
    json!({"model": "gpt-oss", "messages": [{"role": "user", "content": text}]})
}

fn with_tools(mut body: Value) -> Value {
    body["tools"] = json!([serde_json::from_str::<Value>(WEATHER_TOOL).unwrap()]);
    body
}

/// Assembles streamed chunks the way a client does.
fn assemble(data: &[String]) -> Value {
    let mut content = String::new();
    let mut reasoning = String::new();
    let mut calls: Vec<Value> = Vec::new();
    let mut finish = Value::Null;
    let mut usage = Value::Null;
    let mut chorus = Value::Null;
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"), "{data:?}");
    for item in &data[..data.len() - 1] {
        let chunk: Value = serde_json::from_str(item).unwrap();
        assert!(chunk.get("error").is_none(), "{chunk}");
        assert_eq!(chunk["object"], "chat.completion.chunk");
        if !chunk["usage"].is_null() {
            usage = chunk["usage"].clone();
        }
        if !chunk["chorus"].is_null() {
            chorus = chunk["chorus"].clone();
        }
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        content.push_str(delta["content"].as_str().unwrap_or(""));
        let r = delta["reasoning_content"].as_str().unwrap_or("");
        assert_eq!(
            delta["reasoning"].as_str().unwrap_or(""),
            r,
            "both reasoning fields carry the same text"
        );
        reasoning.push_str(r);
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = call["index"].as_u64().unwrap() as usize;
            if index == calls.len() {
                calls.push(json!({"id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}));
            }
            let args = calls[index]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_owned()
                + call["function"]["arguments"].as_str().unwrap_or("");
            calls[index]["function"]["arguments"] = json!(args);
        }
        if !choice["finish_reason"].is_null() {
            finish = choice["finish_reason"].clone();
        }
    }
    json!({"content": content, "reasoning": reasoning, "tool_calls": calls, "finish_reason": finish, "usage": usage, "chorus": chorus})
}

#[tokio::test]
async fn a_clean_answer_with_reasoning_streamed_and_not() {
    let stack = Stack::default().await;
    let text = "<|channel|>analysis<|message|>The user greets. Answer «hello» in kind.<|end|><|start|>assistant<|channel|>final<|message|>Hello — nice to meet you!";
    stack
        .engine
        .script([Answer::text(text), Answer::TokenIds { text: text.into() }]);
    let response = stack.chat(&ask("Hi")).await;
    assert_eq!(response.status(), 200);
    assert!(
        response
            .headers()
            .get(chorus_gateway::REPAIRS_HEADER)
            .is_none()
    );
    let whole: Value = response.json().await.unwrap();
    let message = &whole["choices"][0]["message"];
    assert_eq!(message["content"], "Hello — nice to meet you!");
    assert_eq!(
        message["reasoning_content"],
        "The user greets. Answer «hello» in kind."
    );
    assert_eq!(message["reasoning"], message["reasoning_content"]);
    assert!(message.get("tool_calls").is_none());
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    let usage = &whole["usage"];
    assert_eq!(
        usage["prompt_tokens"].as_u64().unwrap() as usize,
        stack.engine.prompt(0).len()
    );
    assert!(
        usage["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 5
    );

    let mut body = ask("Hi");
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let (status, data) = stack.chat_stream(&body).await;
    assert_eq!(status, 200);
    let streamed = assemble(&data);
    assert_eq!(streamed["content"], message["content"]);
    assert_eq!(streamed["reasoning"], message["reasoning_content"]);
    assert_eq!(streamed["finish_reason"], "stop");
    assert_eq!(streamed["usage"]["prompt_tokens"], usage["prompt_tokens"]);
    // The same prompt both times, sent as token ids with the Harmony stop tokens.
    assert_eq!(stack.engine.prompt(0), stack.engine.prompt(1));
    let sent = &stack.engine.requests()[0];
    assert_eq!(sent["stop_token_ids"], json!([200002, 200012]));
    assert_eq!(sent["skip_special_tokens"], false);
    assert!(
        stack
            .engine
            .prompt_text(0)
            .ends_with("<|start|>user<|message|>Hi<|end|><|start|>assistant")
    );
}

#[tokio::test]
async fn a_tool_call_comes_back_with_an_id_and_streamed_arguments() {
    let stack = Stack::default().await;
    let text = "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}";
    stack
        .engine
        .script([Answer::text(text), Answer::text(text)]);
    let whole: Value = stack
        .chat(&with_tools(ask("Weather in Paris?")))
        .await
        .json()
        .await
        .unwrap();
    let call = &whole["choices"][0]["message"]["tool_calls"][0];
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], "{\"city\": \"Paris\"}");
    assert_eq!(whole["choices"][0]["finish_reason"], "tool_calls");
    assert!(whole["choices"][0]["message"]["content"].is_null());
    let prompt = stack.engine.prompt_text(0);
    assert!(prompt.contains("namespace functions {"), "{prompt}");
    assert!(
        prompt.contains("type get_weather = (_: {\ncity: string,\n}) => any;"),
        "{prompt}"
    );

    let mut body = with_tools(ask("Weather in Paris?"));
    body["stream"] = json!(true);
    let streamed = assemble(&stack.chat_stream(&body).await.1);
    assert_eq!(streamed["tool_calls"][0]["function"], call["function"]);
    assert_eq!(streamed["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn damaged_output_is_repaired_and_the_repairs_are_listed() {
    let stack = Stack::default().await;
    // The shapes engines get from gpt-oss: no header at all, a garbage channel word, a doubled
    // `<|message|>`, JSON after `<|end|>` without a header (sglang#31019).
    let shapes = [
        ("Just the answer.", "Just the answer."),
        ("<|channel|>finall<|message|>Paris.", "Paris."),
        ("<|channel|>final<|message|><|message|>Twice.", "Twice."),
        (
            "<|channel|>analysis<|message|>Think.<|end|>{\"a\": 1}",
            "{\"a\": 1}",
        ),
    ];
    for (text, answer) in shapes {
        stack
            .engine
            .script([Answer::text(text), Answer::text(text)]);
        let response = stack.chat(&ask("q")).await;
        assert_eq!(response.status(), 200, "{text}");
        let kinds = response
            .headers()
            .get(chorus_gateway::REPAIRS_HEADER)
            .map(|v| v.to_str().unwrap().to_owned());
        let whole: Value = response.json().await.unwrap();
        assert_eq!(whole["choices"][0]["message"]["content"], answer, "{text}");
        assert!(kinds.is_some(), "{text}: repairs are named in the header");
        assert!(
            !whole["chorus"]["repairs"].as_array().unwrap().is_empty(),
            "{text}"
        );
        let mut body = ask("q");
        body["stream"] = json!(true);
        let streamed = assemble(&stack.chat_stream(&body).await.1);
        assert_eq!(streamed["content"], answer, "{text}");
        assert!(
            !streamed["chorus"]["repairs"].as_array().unwrap().is_empty(),
            "{text}"
        );
    }
}

#[tokio::test]
async fn strict_turns_a_repair_into_a_502_with_the_raw_text() {
    let stack = Stack::start(chorus_gateway::GatewayConfig {
        strict: true,
        ..config()
    })
    .await;
    stack.engine.script([
        Answer::text("No header."),
        Answer::text("<|channel|>final<|message|>Fine."),
    ]);
    let response = stack.chat(&ask("q")).await;
    assert_eq!(response.status(), 502);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unreadable_output");
    assert_eq!(error["error"]["raw"], "No header.");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--strict")
    );
    let fine: Value = stack.chat(&ask("q")).await.json().await.unwrap();
    assert_eq!(fine["choices"][0]["message"]["content"], "Fine.");
}

#[tokio::test]
async fn upstream_failures_are_errors_with_their_status_never_a_200() {
    let stack = Stack::default().await;
    stack.engine.script([
        Answer::Status { status: 500, body: "engine exploded".into() },
        Answer::Status { status: 400, body: "{\"message\": \"This model's maximum context length is 8 tokens\"}".into() },
        Answer::Raw("data: {not json\n\n".into()),
        Answer::Raw("data: {\"choices\": [{\"text\": \"<|channel|>final<|message|>Hal\"}]}\n\ndata: {\"error\": {\"message\": \"engine died\"}}\n\n".into()),
    ]);
    let cases = [
        (502, "upstream_failed"),
        (400, "upstream_rejected"),
        (502, "upstream_unreadable"),
        (502, "upstream_failed"),
    ];
    for (status, code) in cases {
        let response = stack.chat(&ask("q")).await;
        assert_eq!(response.status().as_u16(), status, "{code}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], code, "{error}");
        for key in ["message", "type", "param", "code"] {
            assert!(error["error"].get(key).is_some(), "{error} has {key}");
        }
    }
    // Streamed: the error arrives as an `error` event, and no [DONE] follows.
    stack.engine.script([Answer::Raw("data: {\"choices\": [{\"text\": \"<|channel|>final<|message|>Hal\"}]}\n\ndata: {not json\n\n".into())]);
    let mut body = ask("q");
    body["stream"] = json!(true);
    let (_, data) = stack.chat_stream(&body).await;
    let last: Value = serde_json::from_str(data.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "upstream_unreadable", "{data:?}");
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502() {
    let config = chorus_gateway::GatewayConfig {
        upstream: "http://127.0.0.1:9/v1".into(),
        ..config()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(chorus_gateway::serve(
        config,
        listener,
        std::future::pending(),
    ));
    let response = reqwest::Client::new()
        .post(format!("http://{address}/v1/chat/completions"))
        .json(&ask("q"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 502);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "upstream_unreachable");
}

/// `n` choices: one generation each, the seed moved on by the choice's index, the prompt
/// counted once and the generated tokens of every choice; streamed, each choice's chunks carry
/// its index, with a role chunk and a finish reason of its own, and one usage chunk at the end.
#[tokio::test]
async fn several_choices_are_generated_whole_and_streamed() {
    let stack = Stack::default().await;
    let answer = |word: &str| {
        Answer::text(&format!(
            "<|channel|>analysis<|message|>Say {word}.<|end|><|start|>assistant<|channel|>final<|message|>{word}!"
        ))
    };
    let words = ["alpha", "beta", "gamma"];
    stack.engine.script(words.map(answer));
    let mut body = ask("Pick a word");
    body["n"] = json!(3);
    body["seed"] = json!(41);
    let whole: Value = stack.chat(&body).await.json().await.unwrap();
    let choices = whole["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3, "{whole}");
    let mut contents: Vec<&str> = Vec::new();
    for (index, choice) in choices.iter().enumerate() {
        assert_eq!(choice["index"], index);
        assert_eq!(choice["finish_reason"], "stop");
        let content = choice["message"]["content"].as_str().unwrap();
        let word = content.trim_end_matches('!');
        assert_eq!(
            choice["message"]["reasoning_content"],
            format!("Say {word}.")
        );
        contents.push(word);
    }
    contents.sort();
    assert_eq!(contents, words, "each scripted generation is one choice");
    let mut seeds: Vec<i64> = (0..3)
        .map(|i| stack.engine.requests()[i]["seed"].as_i64().unwrap())
        .collect();
    seeds.sort();
    assert_eq!(seeds, [41, 42, 43]);
    assert_eq!(stack.engine.prompt(0), stack.engine.prompt(1));
    assert_eq!(stack.engine.prompt(0), stack.engine.prompt(2));
    let usage = &whole["usage"];
    assert_eq!(
        usage["prompt_tokens"].as_u64().unwrap() as usize,
        stack.engine.prompt(0).len(),
        "the prompt is counted once"
    );
    // The fake engine reports one completion token a generation.
    assert_eq!(usage["completion_tokens"], 3);

    stack.engine.script(words[..2].iter().map(|w| answer(w)));
    let mut body = ask("Pick a word");
    body["n"] = json!(2);
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let (status, data) = stack.chat_stream(&body).await;
    assert_eq!(status, 200);
    assert_eq!(data.iter().filter(|d| *d == "[DONE]").count(), 1);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let usage: Vec<&Value> = chunks.iter().filter(|c| !c["usage"].is_null()).collect();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0]["usage"]["completion_tokens"], 2);
    assert!(
        usage[0] == chunks.last().unwrap(),
        "the usage chunk comes last"
    );
    let mut streamed = Vec::new();
    for index in 0..2 {
        let mine: Vec<&Value> = chunks
            .iter()
            .filter_map(|c| c["choices"].get(0))
            .filter(|c| c["index"] == index)
            .collect();
        assert_eq!(mine[0]["delta"]["role"], "assistant", "choice {index}");
        assert_eq!(
            mine.iter()
                .filter(|c| c["delta"]["role"] == "assistant")
                .count(),
            1
        );
        let finishes: Vec<&Value> = mine
            .iter()
            .map(|c| &c["finish_reason"])
            .filter(|f| !f.is_null())
            .collect();
        assert_eq!(finishes, [&json!("stop")], "choice {index}");
        assert!(
            mine.last().unwrap()["finish_reason"] == "stop",
            "its finish is its last chunk"
        );
        let content: String = mine
            .iter()
            .filter_map(|c| c["delta"]["content"].as_str())
            .collect();
        streamed.push(content);
    }
    streamed.sort();
    assert_eq!(streamed, ["alpha!", "beta!"]);
}

/// More choices than the gateway may generate at once is refused before the engine is asked.
#[tokio::test]
async fn more_choices_than_concurrent_slots_are_refused() {
    let stack = Stack::start(chorus_gateway::GatewayConfig {
        max_concurrent: 2,
        ..config()
    })
    .await;
    let mut body = ask("x");
    body["n"] = json!(3);
    let response = stack.chat(&body).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["param"], "/n");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_concurrent"),
        "{error}"
    );
    assert!(stack.engine.requests().is_empty());
}

#[tokio::test]
async fn invalid_requests_are_400s_naming_the_field() {
    let stack = Stack::default().await;
    let cases = [
        (json!({"model": "gpt-oss"}), 400, "/messages"),
        (
            json!({"model": "gpt-oss", "messages": [{"role": "wizard", "content": "x"}]}),
            400,
            "/messages/0/role",
        ),
        (
            json!({"model": "gpt-oss", "messages": [{"role": "user", "content": "x"}], "n": 9}),
            400,
            "/n",
        ),
        (
            json!({"model": "gpt-oss", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}),
            400,
            "/tool_choice",
        ),
        (
            json!({"model": "gpt-oss", "messages": [{"role": "user", "content": "x"}], "temprature": 1}),
            400,
            "/temprature",
        ),
        (
            json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]}),
            404,
            "/model",
        ),
    ];
    for (body, status, param) in cases {
        let response = stack.chat(&body).await;
        assert_eq!(response.status().as_u16(), status, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["param"], param, "{error}");
        assert!(!error["error"]["message"].as_str().unwrap().is_empty());
    }
    let response = stack
        .http
        .post(format!("{}/v1/chat/completions", stack.gateway))
        .body("{\"model\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("line 1"),
        "{error}"
    );
    assert!(
        stack.engine.requests().is_empty(),
        "nothing invalid reaches the engine"
    );
}

#[tokio::test]
async fn keys_are_asked_for_when_configured() {
    let config = chorus_gateway::GatewayConfig {
        api_key_hashes: vec![chorus_gateway::hash_key("sk-right")],
        ..config()
    };
    let stack = Stack::start(config).await;
    stack
        .engine
        .script([Answer::text("<|channel|>final<|message|>ok")]);
    let models = format!("{}/v1/models", stack.gateway);
    assert_eq!(stack.http.get(&models).send().await.unwrap().status(), 401);
    assert_eq!(
        stack
            .http
            .get(&models)
            .bearer_auth("sk-wrong")
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    let listed: Value = stack
        .http
        .get(&models)
        .bearer_auth("sk-right")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["data"][0]["id"], "gpt-oss");
    let url = format!("{}/v1/chat/completions", stack.gateway);
    assert_eq!(
        stack
            .http
            .post(&url)
            .json(&ask("q"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    assert_eq!(
        stack
            .http
            .post(&url)
            .bearer_auth("sk-right")
            .json(&ask("q"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
}

#[tokio::test]
async fn stop_strings_cut_the_answer() {
    let stack = Stack::default().await;
    let text = "<|channel|>analysis<|message|>END is fine here<|end|><|start|>assistant<|channel|>final<|message|>one two END three";
    stack
        .engine
        .script([Answer::text(text), Answer::text(text)]);
    let mut body = ask("count");
    body["stop"] = json!(["END"]);
    let whole: Value = stack.chat(&body).await.json().await.unwrap();
    assert_eq!(whole["choices"][0]["message"]["content"], "one two ");
    assert_eq!(
        whole["choices"][0]["message"]["reasoning_content"],
        "END is fine here"
    );
    body["stream"] = json!(true);
    let streamed = assemble(&stack.chat_stream(&body).await.1);
    assert_eq!(streamed["content"], "one two ");
    assert_eq!(streamed["finish_reason"], "stop");
}

#[tokio::test]
async fn a_named_tool_choice_is_enforced_by_the_prompt() {
    let stack = Stack::default().await;
    // The engine continues after the opened call header: only the arguments.
    stack.engine.script([Answer::text("{\"city\": \"Oslo\"}")]);
    let mut body = with_tools(ask("Anything"));
    body["tool_choice"] = json!({"type": "function", "function": {"name": "get_weather"}});
    let whole: Value = stack.chat(&body).await.json().await.unwrap();
    let call = &whole["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], "{\"city\": \"Oslo\"}");
    assert!(whole.get("chorus").is_none(), "no repair: {whole}");
    assert!(stack.engine.prompt_text(0).ends_with(
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    ));
}

#[tokio::test]
async fn sampling_settings_reach_the_engine_and_response_formats_the_prompt() {
    let stack = Stack::default().await;
    stack
        .engine
        .script([Answer::text("<|channel|>final<|message|>{\"ok\": true}")]);
    let mut body = ask("json please");
    body["temperature"] = json!(0.2);
    body["top_p"] = json!(0.9);
    body["seed"] = json!(7);
    body["max_completion_tokens"] = json!(99);
    body["reasoning_effort"] = json!("high");
    body["response_format"] = json!({"type": "json_schema", "json_schema": {"name": "verdict", "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}});
    assert_eq!(stack.chat(&body).await.status(), 200);
    let sent = &stack.engine.requests()[0];
    assert_eq!(sent["temperature"], 0.2);
    assert_eq!(sent["top_p"], 0.9);
    assert_eq!(sent["seed"], 7);
    assert_eq!(sent["max_tokens"], 99);
    let prompt = stack.engine.prompt_text(0);
    assert!(prompt.contains("Reasoning: high"), "{prompt}");
    assert!(prompt.contains("Current date: 2026-12-02"), "{prompt}");
    assert!(
        prompt.contains("# Response Formats\n\n## verdict\n\n"),
        "{prompt}"
    );
}

/// vllm#27653 and codex#2461: past reasoning between tool calls is kept, so the model knows
/// why it called them; after a final answer it is dropped.
#[tokio::test]
async fn reasoning_is_kept_within_a_tool_loop_and_dropped_after_the_answer() {
    let stack = Stack::default().await;
    let step = |n: usize| {
        format!(
            "<|channel|>analysis<|message|>Reason {n}: call the tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{{\"city\": \"C{n}\"}}"
        )
    };
    stack.engine.script([
        Answer::text(&step(1)),
        Answer::text(&step(2)),
        Answer::text("<|channel|>analysis<|message|>Reason 3: enough.<|end|><|start|>assistant<|channel|>final<|message|>Done."),
        Answer::text("<|channel|>final<|message|>Again."),
    ]);
    let mut messages = vec![json!({"role": "user", "content": "Compare two cities."})];
    for round in 0..3 {
        let mut body = with_tools(ask(""));
        body["messages"] = json!(messages);
        let whole: Value = stack.chat(&body).await.json().await.unwrap();
        let mut reply = whole["choices"][0]["message"].clone();
        // Round 2 sends its reasoning back as `reasoning`, round 1 as `reasoning_content`.
        if round == 1 {
            let reasoning = reply
                .as_object_mut()
                .unwrap()
                .remove("reasoning_content")
                .unwrap();
            reply["reasoning"] = reasoning;
        } else {
            reply.as_object_mut().unwrap().remove("reasoning");
        }
        let calls = reply["tool_calls"].clone();
        messages.push(reply);
        for call in calls.as_array().into_iter().flatten() {
            messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "sunny"}));
        }
    }
    let second = stack.engine.prompt_text(1);
    let third = stack.engine.prompt_text(2);
    assert!(
        second.contains("<|channel|>analysis<|message|>Reason 1: call the tool.<|end|>"),
        "{second}"
    );
    assert!(
        third.contains("Reason 1: call the tool.") && third.contains("Reason 2: call the tool."),
        "{third}"
    );
    assert!(third.contains("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>sunny<|end|>"), "{third}");
    messages.push(json!({"role": "user", "content": "And tomorrow?"}));
    let mut body = with_tools(ask(""));
    body["messages"] = json!(messages);
    assert_eq!(stack.chat(&body).await.status(), 200);
    let fourth = stack.engine.prompt_text(3);
    assert!(
        !fourth.contains("Reason "),
        "reasoning before a final answer is dropped: {fourth}"
    );
    assert!(
        fourth.contains("<|channel|>final<|message|>Done.<|end|>"),
        "{fourth}"
    );
}

#[tokio::test]
async fn models_are_listed_and_unknown_routes_are_404s() {
    let stack = Stack::default().await;
    let listed: Value = stack
        .http
        .get(format!("{}/v1/models", stack.gateway))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["object"], "list");
    assert_eq!(listed["data"][0]["id"], "gpt-oss");
    let one = stack
        .http
        .get(format!("{}/v1/models/gpt-oss", stack.gateway))
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), 200);
    let missing = stack
        .http
        .get(format!("{}/v1/models/gpt-5", stack.gateway))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let route = stack
        .http
        .get(format!("{}/v1/nothing", stack.gateway))
        .send()
        .await
        .unwrap();
    assert_eq!(route.status(), 404);
    let error: Value = route.json().await.unwrap();
    assert_eq!(error["error"]["code"], "unknown_url");
}

#[tokio::test]
async fn llama_cpp_and_ollama_are_upstreams_too() {
    use chorus_gateway::UpstreamKind;
    let text = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hi from the engine.";
    for kind in [UpstreamKind::LlamaCpp, UpstreamKind::Ollama] {
        let stack = Stack::start(chorus_gateway::GatewayConfig {
            upstream_kind: kind,
            ..config()
        })
        .await;
        stack
            .engine
            .script([Answer::text(text), Answer::text(text)]);
        let mut body = ask("Hi");
        body["max_tokens"] = json!(64);
        body["temperature"] = json!(0.5);
        let whole: Value = stack.chat(&body).await.json().await.unwrap();
        let message = &whole["choices"][0]["message"];
        assert_eq!(message["content"], "Hi from the engine.", "{kind:?}");
        assert_eq!(message["reasoning_content"], "Think.", "{kind:?}");
        body["stream"] = json!(true);
        let streamed = assemble(&stack.chat_stream(&body).await.1);
        assert_eq!(streamed["content"], "Hi from the engine.", "{kind:?}");
        let sent = &stack.engine.requests()[0];
        let prompt = stack.engine.prompt_text(0);
        assert!(
            prompt.ends_with("<|start|>user<|message|>Hi<|end|><|start|>assistant"),
            "{kind:?}: {prompt}"
        );
        match kind {
            UpstreamKind::LlamaCpp => {
                assert_eq!(sent["n_predict"], 64);
                assert_eq!(sent["return_tokens"], true);
                assert!(sent["prompt"].is_array(), "token ids");
                // llama.cpp's `stop_type: limit` is OpenAI's `length`.
                assert_eq!(whole["choices"][0]["finish_reason"], "length");
                assert_eq!(whole["usage"]["completion_tokens"], 42);
            }
            _ => {
                assert_eq!(sent["raw"], true);
                assert_eq!(sent["options"]["num_predict"], 64);
                assert_eq!(sent["options"]["temperature"], 0.5);
                assert_eq!(sent["model"], "gpt-oss");
                assert_eq!(whole["choices"][0]["finish_reason"], "stop");
                assert_eq!(whole["usage"]["completion_tokens"], 17);
            }
        }
    }
}
