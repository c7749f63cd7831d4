//! `/v1/responses` end to end over HTTP against a scripted engine: output items whole and as
//! events, stored responses, `previous_response_id` from the second request on (vllm#33089),
//! and a tool loop whose later prompts carry the earlier steps' reasoning (vllm#27653).

mod support;

use serde_json::{Value, json};
use support::{Answer, Stack};

const TOOL: &str = r#"{"type": "function", "name": "get_weather", "description": "Weather of a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}"#;

fn tools() -> Value {
    json!([serde_json::from_str::<Value>(TOOL).unwrap()])
}

const HELLO: &str = "<|channel|>analysis<|message|>They greet me.<|end|><|start|>assistant<|channel|>final<|message|>Hello there!";

#[tokio::test]
async fn a_response_has_reasoning_and_message_items_and_is_stored() {
    let stack = Stack::default().await;
    stack.engine.script([Answer::text(HELLO)]);
    let response = stack
        .post(
            "/v1/responses",
            &json!({"model": "gpt-oss", "input": "Hi", "instructions": "Be brief."}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 2, "{body}");
    assert_eq!(output[0]["type"], "reasoning");
    assert_eq!(
        output[0]["content"][0],
        json!({"type": "reasoning_text", "text": "They greet me."})
    );
    assert_eq!(output[1]["type"], "message");
    assert_eq!(output[1]["content"][0]["type"], "output_text");
    assert_eq!(output[1]["content"][0]["text"], "Hello there!");
    assert_eq!(body["instructions"], "Be brief.");
    assert!(
        body["usage"]["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(
        stack
            .engine
            .prompt_text(0)
            .contains("# Instructions\n\nBe brief.")
    );

    let id = body["id"].as_str().unwrap();
    let url = format!("{}/v1/responses/{id}", stack.gateway);
    let stored: Value = stack
        .http
        .get(&url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stored, body);
    let deleted: Value = stack
        .http
        .delete(&url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(stack.http.get(&url).send().await.unwrap().status(), 404);

    // `store: false` keeps nothing.
    stack.engine.script([Answer::text(HELLO)]);
    let body: Value = stack
        .post(
            "/v1/responses",
            &json!({"model": "gpt-oss", "input": "Hi", "store": false}),
        )
        .await
        .json()
        .await
        .unwrap();
    let url = format!(
        "{}/v1/responses/{}",
        stack.gateway,
        body["id"].as_str().unwrap()
    );
    assert_eq!(stack.http.get(&url).send().await.unwrap().status(), 404);
}

#[tokio::test]
async fn the_stream_is_the_event_sequence_clients_expect() {
    let stack = Stack::default().await;
    let call = "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}";
    stack
        .engine
        .script([Answer::text(HELLO), Answer::text(call)]);
    let events = stack
        .response_events(&json!({"model": "gpt-oss", "input": "Hi", "stream": true}))
        .await;
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.last(), Some(&"response.completed"));
    for (i, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"], name.as_str());
        assert_eq!(data["sequence_number"], i as u64);
    }
    let expected_order = [
        "response.output_item.added",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ];
    let mut deduped: Vec<&str> = Vec::new();
    for name in &names[2..names.len() - 1] {
        if deduped.last() != Some(name) {
            deduped.push(name);
        }
    }
    assert_eq!(deduped, expected_order);
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello there!");
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(completed["output"][1]["content"][0]["text"], "Hello there!");
    let url = format!(
        "{}/v1/responses/{}",
        stack.gateway,
        completed["id"].as_str().unwrap()
    );
    let stored: Value = stack
        .http
        .get(&url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(&stored, completed);

    let events = stack.response_events(&json!({"model": "gpt-oss", "input": "Weather in Oslo?", "tools": tools(), "stream": true})).await;
    let args: String = events
        .iter()
        .filter(|(n, _)| n == "response.function_call_arguments.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, "{\"city\": \"Oslo\"}");
    let done = events
        .iter()
        .find(|(n, _)| n == "response.function_call_arguments.done")
        .unwrap();
    assert_eq!(done.1["arguments"], "{\"city\": \"Oslo\"}");
    let completed = &events.last().unwrap().1["response"];
    assert_eq!(completed["output"][1]["type"], "function_call");
    assert_eq!(completed["output"][1]["name"], "get_weather");
    assert!(
        completed["output"][1]["call_id"]
            .as_str()
            .unwrap()
            .starts_with("call_")
    );
}

/// vllm#33089: the second request, with `previous_response_id`, works and sees the first turn;
/// the first turn's reasoning is dropped after its final answer.
#[tokio::test]
async fn a_second_request_continues_the_first() {
    let stack = Stack::default().await;
    stack.engine.script([
        Answer::text(HELLO),
        Answer::text("<|channel|>final<|message|>Your name is Ada."),
    ]);
    let first: Value = stack
        .post(
            "/v1/responses",
            &json!({"model": "gpt-oss", "input": "Hi, I am Ada.", "instructions": "Be brief."}),
        )
        .await
        .json()
        .await
        .unwrap();
    let second = stack
        .post("/v1/responses", &json!({"model": "gpt-oss", "input": "What is my name?", "previous_response_id": first["id"]}))
        .await;
    assert_eq!(second.status(), 200);
    let second: Value = second.json().await.unwrap();
    assert_eq!(
        second["output"][0]["content"][0]["text"],
        "Your name is Ada."
    );
    assert_eq!(second["previous_response_id"], first["id"]);
    let prompt = stack.engine.prompt_text(1);
    assert!(prompt.contains("<|start|>user<|message|>Hi, I am Ada.<|end|><|start|>assistant<|channel|>final<|message|>Hello there!<|end|><|start|>user<|message|>What is my name?<|end|>"), "{prompt}");
    assert!(
        !prompt.contains("They greet me."),
        "reasoning before a final answer is dropped: {prompt}"
    );
    assert!(
        !prompt.contains("Be brief."),
        "instructions are not carried over: {prompt}"
    );
    let unknown = stack
        .post(
            "/v1/responses",
            &json!({"model": "gpt-oss", "input": "x", "previous_response_id": "resp_nope"}),
        )
        .await;
    assert_eq!(unknown.status(), 404);
    let error: Value = unknown.json().await.unwrap();
    assert_eq!(error["error"]["code"], "response_not_found");
}

/// vllm#27653: a three-step tool loop over `previous_response_id`; the second and third
/// prompts carry the analysis of the earlier steps.
#[tokio::test]
async fn a_tool_loop_keeps_its_reasoning() {
    let stack = Stack::default().await;
    let step = |n: usize| {
        Answer::text(&format!(
            "<|channel|>analysis<|message|>Step {n}: ask the tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{{\"city\": \"C{n}\"}}"
        ))
    };
    stack.engine.script([
        step(1),
        step(2),
        Answer::text("<|channel|>final<|message|>Both sunny."),
    ]);
    let mut previous: Option<Value> = None;
    let mut input = json!("Compare two cities.");
    for _ in 0..3 {
        let mut body = json!({"model": "gpt-oss", "input": input, "tools": tools()});
        if let Some(previous) = &previous {
            body["previous_response_id"] = previous["id"].clone();
        }
        let response: Value = stack
            .post("/v1/responses", &body)
            .await
            .json()
            .await
            .unwrap();
        let calls: Vec<Value> = response["output"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["type"] == "function_call")
            .cloned()
            .collect();
        input = json!(calls.iter().map(|c| json!({"type": "function_call_output", "call_id": c["call_id"], "output": "sunny"})).collect::<Vec<_>>());
        previous = Some(response);
    }
    assert_eq!(
        previous.unwrap()["output"][0]["content"][0]["text"],
        "Both sunny."
    );
    let second = stack.engine.prompt_text(1);
    let third = stack.engine.prompt_text(2);
    assert!(
        second.contains("<|channel|>analysis<|message|>Step 1: ask the tool.<|end|>"),
        "{second}"
    );
    assert!(second.contains("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>sunny<|end|>"), "{second}");
    assert!(
        third.contains("Step 1: ask the tool.") && third.contains("Step 2: ask the tool."),
        "{third}"
    );
}

/// (A past call renders as the reference renders it: the recipient right after the role.)
#[tokio::test]
async fn a_client_may_send_the_whole_history_back_as_items() {
    let stack = Stack::default().await;
    stack
        .engine
        .script([Answer::text("<|channel|>final<|message|>Done.")]);
    let input = json!([
        {"role": "user", "content": "Weather in Rome?"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "Use the tool."}]},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Rome\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "hot"}
    ]);
    let response = stack
        .post(
            "/v1/responses",
            &json!({"model": "gpt-oss", "input": input, "tools": tools()}),
        )
        .await;
    assert_eq!(response.status(), 200);
    let prompt = stack.engine.prompt_text(0);
    assert!(prompt.contains("<|start|>assistant<|channel|>analysis<|message|>Use the tool.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Rome\"}<|call|><|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>hot<|end|>"), "{prompt}");
}

#[tokio::test]
async fn refused_fields_name_themselves() {
    let stack = Stack::default().await;
    let cases = [
        (json!({"model": "gpt-oss"}), "/input"),
        (
            json!({"model": "gpt-oss", "input": "x", "tool_choice": "required"}),
            "/tool_choice",
        ),
        (
            json!({"model": "gpt-oss", "input": "x", "background": true}),
            "/background",
        ),
        (
            json!({"model": "gpt-oss", "input": "x", "tools": [{"type": "web_search"}]}),
            "/tools/0/type",
        ),
        (
            json!({"model": "gpt-oss", "input": "x", "reasoning": {"effort": "minimal"}}),
            "/reasoning/effort",
        ),
        (
            json!({"model": "gpt-oss", "input": "x", "truncation": "auto"}),
            "/truncation",
        ),
        (
            json!({"model": "gpt-oss", "input": "x", "text": {"format": {"type": "json_schema"}}}),
            "/text/format/name",
        ),
        (
            json!({"model": "gpt-oss", "input": "x", "bogus": 1}),
            "/bogus",
        ),
    ];
    for (body, param) in cases {
        let response = stack.post("/v1/responses", &body).await;
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["param"], param, "{error}");
    }
    assert!(stack.engine.requests().is_empty());
}
