//! The Harmony (gpt-oss) client against the fake server's raw completions streams.

mod support;

use std::time::Duration;

use chorus_agent::model::{
    EndpointConfig, HarmonyClient, ModelClient, ModelRequest, PromptForm, StreamEvent,
};
use chorus_core::{FunctionDefinition, Message, Nullable, Role, ToolCall, ToolDefinition};
use chorus_harmony::{encoding, tokens};
use serde_json::{Value, json};
use support::fake_openai::{FakeOpenAi, Reply, completion};

const CALL_REPLY: &str = "<|channel|>analysis<|message|>User asks weather in Paris. Call the tool.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}";

fn config(fake: &FakeOpenAi) -> EndpointConfig {
    EndpointConfig::new(fake.base_url()).with_retries(2, Duration::from_millis(5))
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        kind: Some("function".into()),
        function: FunctionDefinition {
            name: "get_weather".into(),
            description: Some("Current weather in a city".into()),
            parameters: Some(
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            ),
            strict: None,
            extra: Default::default(),
        },
        extra: Default::default(),
        given: None,
    }
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "gpt-oss-20b".into(),
        messages: vec![
            Message::new(Role::System, "You answer weather questions."),
            Message::new(Role::User, "Weather in Paris?"),
        ],
        tools: vec![weather_tool()],
        ..ModelRequest::default()
    }
}

fn prompt_text(body: &Value) -> String {
    let ids: Vec<u32> = body["prompt"]
        .as_array()
        .expect("prompt as token ids")
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    encoding().decode_utf8(&ids).unwrap()
}

/// The token usage a reply's message carries (failing the test when it has none).
fn token_usage(message: &Message) -> &chorus_core::TokenUsage {
    let metadata = message.metadata.as_ref().expect("metadata");
    metadata.token_usage.as_ref().expect("token usage")
}

#[tokio::test]
async fn analysis_then_a_commentary_tool_call_becomes_reasoning_and_a_tool_call() {
    let mut chunks = completion::text_in_pieces(CALL_REPLY, 7);
    chunks.push(completion::finish("stop", Some(tokens::CALL)));
    chunks.push(completion::usage(321, 40));
    let fake = FakeOpenAi::start(vec![
        Reply::completions(chunks).chunk_delay(Duration::from_millis(2)),
    ])
    .await;
    let client = HarmonyClient::new(config(&fake));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reply = client.complete(&request(), Some(&tx)).await.unwrap();

    let message = support::one_tool_call(&reply, "get_weather", "{\"city\":\"Paris\"}");
    assert_eq!(message.channel.as_deref(), Some("commentary"));
    assert_eq!(
        support::reasoning(message),
        ["User asks weather in Paris. Call the tool."]
    );
    let meta = serde_json::to_value(message.metadata.as_ref().unwrap()).unwrap();
    assert_eq!(meta["token_usage"]["prompt_tokens"], 321);
    assert_eq!(meta["token_usage"]["completion_tokens"], 40);
    assert_eq!(meta["token_usage"]["total_cost_usd"].as_f64(), Some(0.0));
    assert!(meta["latency_ms"]["ttft"].as_f64().is_some());
    assert!(
        meta["latency_ms"]["total_time"].as_f64().unwrap()
            >= meta["latency_ms"]["ttft"].as_f64().unwrap()
    );

    drop(tx);
    let mut analysis = String::new();
    let mut announced = Vec::new();
    while let Some(event) = rx.recv().await {
        match event {
            StreamEvent::Text { channel, delta } => {
                assert_eq!(channel.as_deref(), Some("analysis"));
                analysis.push_str(&delta);
            }
            StreamEvent::ToolCall { id, name } => announced.push((id, name)),
        }
    }
    assert_eq!(analysis, "User asks weather in Paris. Call the tool.");
    assert_eq!(
        announced,
        vec![(message.calls()[0].id.clone(), "get_weather".to_owned())]
    );

    let sent = fake.requests();
    assert_eq!(sent[0].path, "/v1/completions");
    let body = &sent[0].body;
    assert_eq!(body["model"], "gpt-oss-20b");
    assert_eq!(body["stream"], true);
    assert_eq!(body["skip_special_tokens"], false);
    assert_eq!(
        body["stop_token_ids"],
        json!([tokens::RETURN, tokens::CALL])
    );
    let prompt = prompt_text(body);
    assert!(prompt.starts_with("<|start|>system<|message|>"), "{prompt}");
    assert!(prompt.contains("namespace functions {"), "{prompt}");
    assert!(prompt.contains("type get_weather = (_: {"), "{prompt}");
    assert!(
        prompt.contains("# Instructions\n\nYou answer weather questions."),
        "{prompt}"
    );
    assert!(
        prompt.contains("<|start|>user<|message|>Weather in Paris?<|end|>"),
        "{prompt}"
    );
    assert!(prompt.ends_with("<|start|>assistant"), "{prompt}");
}

#[tokio::test]
async fn a_final_answer_missing_its_return_token_is_read_leniently() {
    let reply = "<|channel|>analysis<|message|>Sunny per tool.<|end|><|start|>assistant<|channel|>final<|message|>It is sunny in Paris.";
    let mut chunks = completion::text_in_pieces(reply, 5);
    chunks.push(completion::finish("length", None));
    let fake = FakeOpenAi::start(vec![Reply::completions(chunks)]).await;
    let client = HarmonyClient::new(config(&fake));
    let mut request = request();
    let call = ToolCall::function("call_1", "get_weather", &json!({"city": "Paris"}));
    let mut assistant = Message::new(Role::Assistant, "");
    assistant.content = Nullable::Absent;
    assistant.tool_calls = Nullable::Value(vec![call]);
    let mut result = Message::new(Role::Tool, "{\"sky\":\"sunny\"}");
    result.tool_call_id = Some("call_1".into());
    request.messages.extend([assistant, result]);

    let reply = client.complete(&request, None).await.unwrap();
    assert_eq!(reply.finish_reason.as_deref(), Some("length"));
    let message = reply.messages.last().unwrap();
    assert_eq!(message.channel.as_deref(), Some("final"));
    assert_eq!(message.text(), "It is sunny in Paris.");
    assert!(message.calls().is_empty());
    // No usage reported: chorus counts the tokens itself.
    let usage = token_usage(message);
    let sent = fake.requests();
    let prompt_ids = sent[0].body["prompt"].as_array().unwrap().len() as u64;
    assert_eq!(usage.prompt_tokens, Some(prompt_ids));
    assert!(usage.completion_tokens.unwrap() > 10);
    assert_eq!(usage.extra["counted_by"], "chorus (o200k_harmony)");
    // The earlier call and its result went out as Harmony commentary messages.
    let prompt = prompt_text(&sent[0].body);
    assert!(
        prompt.contains("to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>")
            || prompt.contains("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>"),
        "{prompt}"
    );
    assert!(
        prompt.contains("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{\"sky\":\"sunny\"}<|end|>"),
        "{prompt}"
    );
}

#[tokio::test]
async fn token_id_chunks_and_text_prompts_are_supported() {
    let ids =
        encoding().encode_with_special_tokens("<|channel|>final<|message|>Hi there.<|return|>");
    let chunks = vec![
        completion::tokens(&ids[..3], "<|channel|>final<|message|>"),
        completion::tokens(&ids[3..], "Hi there.<|return|>"),
        completion::finish("stop", Some(tokens::RETURN)),
    ];
    let fake = FakeOpenAi::start(vec![Reply::completions(chunks)]).await;
    let client = HarmonyClient::new(config(&fake)).with_prompt_form(PromptForm::Text);
    let reply = client.complete(&request(), None).await.unwrap();
    assert_eq!(reply.messages[0].text(), "Hi there.");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    let usage = token_usage(&reply.messages[0]);
    assert_eq!(usage.completion_tokens, Some(ids.len() as u64));
    let prompt = fake.requests()[0].body["prompt"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(prompt.starts_with("<|start|>system<|message|>"), "{prompt}");
    assert!(prompt.ends_with("<|start|>assistant"), "{prompt}");
}

#[tokio::test]
async fn output_schema_goes_into_the_response_formats_section() {
    let chunks = vec![completion::text("<|channel|>final<|message|>{\"ok\":true}")];
    let fake = FakeOpenAi::start(vec![Reply::completions(chunks)]).await;
    let client = HarmonyClient::new(config(&fake));
    let mut request = request();
    request.tools.clear();
    request.output_schema = Some((
        "verdict".into(),
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
    ));
    client.complete(&request, None).await.unwrap();
    let prompt = prompt_text(&fake.requests()[0].body);
    assert!(prompt.contains("# Response Formats"), "{prompt}");
    assert!(prompt.contains("## verdict"), "{prompt}");
}

#[tokio::test]
async fn a_reply_that_keeps_its_call_token_and_an_unclosed_preamble_is_read() {
    // llama.cpp-style: the stop token is left in the text; a commentary preamble precedes the
    // call without its <|end|>.
    let reply = "<|channel|>commentary<|message|>Checking the weather.<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Oslo\"}<|call|>";
    let chunks = vec![completion::text(reply), completion::finish("stop", None)];
    let fake = FakeOpenAi::start(vec![Reply::completions(chunks)]).await;
    let client = HarmonyClient::new(config(&fake));
    let reply = client.complete(&request(), None).await.unwrap();
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    let message = &reply.messages[0];
    assert_eq!(message.text(), "Checking the weather.");
    assert_eq!(message.calls()[0].function.arguments, "{\"city\":\"Oslo\"}");
    let repairs = &message.metadata.as_ref().unwrap().extra["harmony_repairs"];
    assert_eq!(repairs.as_array().map(Vec::len), Some(1), "{repairs}");
}
