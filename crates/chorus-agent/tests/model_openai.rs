//! The Chat Completions client against the fake server: streaming, tool calls, usage, latency,
//! cost, retries, timeouts and errors.

mod support;

use std::time::{Duration, Instant};

use chorus_agent::cost::{Price, PriceTable};
use chorus_agent::model::{
    EndpointConfig, ModelClient, ModelError, ModelRequest, OpenAiChatClient, StreamEvent,
};
use chorus_core::{ContentPart, DataPart, FunctionDefinition, Message, Role, ToolDefinition};
use serde_json::{Value, json};
use support::fake_openai::{FakeOpenAi, Reply, chat};

fn config(fake: &FakeOpenAi) -> EndpointConfig {
    let prices = PriceTable {
        models: [(
            "gpt-test".to_owned(),
            Price {
                input: 2.0,
                output: 8.0,
            },
        )]
        .into(),
        ..PriceTable::default()
    };
    EndpointConfig::new(fake.base_url())
        .with_api_key("sk-fake")
        .with_retries(3, Duration::from_millis(10))
        .with_timeout(Duration::from_secs(10))
        .with_prices(Some(prices.into()))
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "gpt-test".into(),
        messages: vec![
            Message::new(Role::System, "You are terse."),
            Message::new(Role::User, "Weather in Paris?"),
        ],
        tools: vec![ToolDefinition {
            kind: Some("function".into()),
            function: FunctionDefinition {
                name: "get_weather".into(),
                description: Some("Current weather".into()),
                parameters: Some(
                    json!({"type": "object", "properties": {"city": {"type": "string"}}}),
                ),
                strict: None,
                extra: Default::default(),
            },
            extra: Default::default(),
            given: None,
        }],
        ..ModelRequest::default()
    }
}

fn usage_of(message: &Message) -> Value {
    serde_json::to_value(message.metadata.as_ref().unwrap()).unwrap()
}

#[tokio::test]
async fn split_tool_call_deltas_are_assembled_with_usage_latency_and_cost() {
    let fake = FakeOpenAi::start(vec![
        Reply::chat(vec![
            chat::role(),
            chat::reasoning("The user wants "),
            chat::reasoning_field("the weather."),
            chat::call_start(0, "call_abc", "get_weather", ""),
            chat::call_arguments(0, "{\"ci"),
            chat::call_arguments(0, "ty\": \"Par"),
            chat::call_arguments(0, "is\"}"),
            chat::finish("tool_calls"),
            chat::usage(1500, 500),
        ])
        .chunk_delay(Duration::from_millis(15)),
    ])
    .await;
    let client = OpenAiChatClient::new(config(&fake));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reply = client.complete(&request(), Some(&tx)).await.unwrap();

    let message = support::one_tool_call(&reply, "get_weather", "{\"city\": \"Paris\"}");
    assert_eq!(message.calls()[0].id, "call_abc");
    assert_eq!(support::reasoning(message), ["The user wants the weather."]);

    let meta = usage_of(message);
    assert_eq!(meta["token_usage"]["prompt_tokens"], 1500);
    assert_eq!(meta["token_usage"]["completion_tokens"], 500);
    assert_eq!(meta["token_usage"]["total_tokens"], 2000);
    // 1500 × $2/M + 500 × $8/M
    assert_eq!(meta["token_usage"]["total_cost_usd"].as_f64(), Some(0.007));
    assert_eq!(meta["model_version"], "fake-model");
    assert_eq!(meta["system_fingerprint"], "fp_fake");
    let ttft = meta["latency_ms"]["ttft"].as_f64().unwrap();
    let total = meta["latency_ms"]["total_time"].as_f64().unwrap();
    // The first generated piece is the second chunk (15 ms in); the stream lasts 8 delays.
    assert!(ttft >= 10.0, "ttft {ttft}");
    assert!(total >= 8.0 * 15.0 * 0.9, "total {total}");
    assert!(total > ttft + 50.0, "ttft {ttft} total {total}");

    drop(tx);
    let mut events = Vec::new();
    while let Some(event) = rx.recv().await {
        events.push(event);
    }
    assert_eq!(
        events,
        vec![
            StreamEvent::Text {
                channel: Some("analysis".into()),
                delta: "The user wants ".into()
            },
            StreamEvent::Text {
                channel: Some("analysis".into()),
                delta: "the weather.".into()
            },
            StreamEvent::ToolCall {
                id: "call_abc".into(),
                name: "get_weather".into()
            },
        ]
    );

    let sent = fake.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v1/chat/completions");
    assert_eq!(sent[0].authorization.as_deref(), Some("Bearer sk-fake"));
    let body = &sent[0].body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert_eq!(body["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][1]["content"], "Weather in Paris?");
    assert!(body.get("response_format").is_none());
}

#[tokio::test]
async fn text_reply_streams_and_a_json_body_is_read_too() {
    let mut pieces = vec![chat::role()];
    pieces.extend(chat::text_in_pieces("It is sunny in Paris.", 4));
    pieces.push(chat::finish("stop"));
    pieces.push(chat::usage(20, 6));
    let fake = FakeOpenAi::start(vec![
        Reply::chat(pieces),
        Reply::json(chat::completion("Cloudy.", 9, 2)),
    ])
    .await;
    let client = OpenAiChatClient::new(config(&fake));
    let first = client.complete(&request(), None).await.unwrap();
    assert_eq!(first.messages[0].text(), "It is sunny in Paris.");
    assert_eq!(first.finish_reason.as_deref(), Some("stop"));
    let second = client.complete(&request(), None).await.unwrap();
    assert_eq!(second.messages[0].text(), "Cloudy.");
    let meta = usage_of(&second.messages[0]);
    assert_eq!(meta["token_usage"]["total_tokens"], 11);
    assert!(meta["latency_ms"]["total_time"].as_f64().is_some());
}

#[tokio::test]
async fn data_parts_are_rendered_and_output_schema_becomes_response_format() {
    let fake = FakeOpenAi::start(vec![Reply::json(chat::completion("{}", 1, 1))]).await;
    let client = OpenAiChatClient::new(config(&fake));
    let mut request = request();
    request.tools.clear();
    request.messages.push(Message::with_parts(
        Role::User,
        vec![ContentPart::Data(DataPart {
            kind: Some("user".into()),
            data: json!({"name": "John"}),
            ..DataPart::default()
        })],
    ));
    request.output_schema = Some(("answer".into(), json!({"type": "object"})));
    client.complete(&request, None).await.unwrap();
    let body = &fake.requests()[0].body;
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": false}})
    );
    let rendered = body["messages"].to_string();
    assert!(rendered.contains("## Data: ¶user"), "{rendered}");
    assert!(body.get("tools").is_none());
}

#[tokio::test]
async fn retries_after_429_honouring_retry_after_then_succeeds() {
    let fake = FakeOpenAi::start(vec![
        Reply::status(429).retry_after("0.2"),
        Reply::status(503),
        Reply::json(chat::completion("ok", 1, 1)),
    ])
    .await;
    let client = OpenAiChatClient::new(config(&fake));
    let started = Instant::now();
    let reply = client.complete(&request(), None).await.unwrap();
    assert_eq!(reply.messages[0].text(), "ok");
    assert_eq!(fake.requests().len(), 3);
    // The 429 asked for 200 ms; the configured backoff alone is 10 ms.
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test]
async fn server_errors_exhaust_the_attempts_with_a_clear_error() {
    let fake = FakeOpenAi::start(vec![
        Reply::status(500),
        Reply::status(500),
        Reply::status(500),
        Reply::json(chat::completion("never", 1, 1)),
    ])
    .await;
    let client = OpenAiChatClient::new(config(&fake));
    let error = client.complete(&request(), None).await.unwrap_err();
    assert!(
        matches!(error, ModelError::Status { status: 500, .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(text.contains("scripted status 500"), "{text}");
    assert!(text.contains("/v1/chat/completions"), "{text}");
    assert_eq!(fake.requests().len(), 3);
    assert_eq!(fake.remaining(), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried_and_carry_a_hint() {
    let fake = FakeOpenAi::start(vec![
        Reply::status(401),
        Reply::json(chat::completion("never", 1, 1)),
    ])
    .await;
    let client = OpenAiChatClient::new(config(&fake));
    let error = client.complete(&request(), None).await.unwrap_err();
    assert!(matches!(error, ModelError::Status { status: 401, .. }));
    assert!(error.to_string().contains("OPENAI_API_KEY"), "{error}");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let fake = FakeOpenAi::start(vec![
        Reply::json(chat::completion("late", 1, 1)).first_delay(Duration::from_secs(5)),
    ])
    .await;
    let client = OpenAiChatClient::new(config(&fake).with_timeout(Duration::from_millis(150)));
    let started = Instant::now();
    let error = client.complete(&request(), None).await.unwrap_err();
    assert!(matches!(error, ModelError::Timeout(150)), "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn dropping_the_future_cancels_the_call() {
    let fake = FakeOpenAi::start(vec![
        Reply::json(chat::completion("late", 1, 1)).first_delay(Duration::from_secs(5)),
    ])
    .await;
    let client = OpenAiChatClient::new(config(&fake));
    let request = request();
    let outcome =
        tokio::time::timeout(Duration::from_millis(100), client.complete(&request, None)).await;
    assert!(
        outcome.is_err(),
        "the call should still be pending when dropped"
    );
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let client =
        OpenAiChatClient::new(EndpointConfig::new(base).with_retries(2, Duration::from_millis(5)));
    let error = client.complete(&request(), None).await.unwrap_err();
    assert!(matches!(error, ModelError::Transport(_)), "{error:?}");
    assert!(
        error.to_string().contains("/v1/chat/completions"),
        "{error}"
    );
}

#[tokio::test]
async fn usage_is_estimated_when_the_server_reports_none() {
    let fake = FakeOpenAi::start(vec![Reply::chat(vec![
        chat::role(),
        chat::text("It is sunny."),
        chat::finish("stop"),
    ])])
    .await;
    let client = OpenAiChatClient::new(config(&fake).with_prices(Some(PriceTable::builtin())));
    let mut request = request();
    request.model = "gpt-4o".into();
    let reply = client.complete(&request, None).await.unwrap();
    let usage = reply.messages[0]
        .metadata
        .as_ref()
        .unwrap()
        .token_usage
        .clone()
        .unwrap();
    assert_eq!(usage.extra["counted_by"], "chorus (estimate)");
    let prompt = usage.prompt_tokens.unwrap();
    let completion = usage.completion_tokens.unwrap();
    // Two short messages and one small tool: dozens of tokens, not zero and not thousands.
    assert!((20..200).contains(&prompt), "{prompt}");
    assert!((3..15).contains(&completion), "{completion}");
    assert_eq!(usage.total_tokens, Some(prompt + completion));
    // gpt-4o is priced in the built-in table.
    let price = PriceTable::builtin().price("gpt-4o").unwrap();
    let cost = usage.total_cost_usd.unwrap().as_f64().unwrap();
    let expected = (prompt as f64 * price.input + completion as f64 * price.output) / 1e6;
    assert!((cost - expected).abs() < 1e-9, "{cost} vs {expected}");
}
