//! Structured requests against the fake server: the schema repair loop, batches of inputs with
//! one `_instance` each, and a loop that keeps its state.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use chorus_agent::model::{EndpointConfig, HarmonyClient, OpenAiChatClient};
use chorus_agent::structured::{StateLoop, StructuredError, StructuredRequest};
use chorus_core::{ContentPart, DataPart, Message, Role};
use serde_json::{Value, json};
use support::fake_openai::{FakeOpenAi, Reply, chat, completion};

fn person_schema() -> Value {
    json!({"type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
        "required": ["name", "age"], "additionalProperties": false})
}

fn client(fake: &FakeOpenAi) -> OpenAiChatClient {
    OpenAiChatClient::new(
        EndpointConfig::new(fake.base_url()).with_retries(1, Duration::from_millis(1)),
    )
}

fn request() -> StructuredRequest {
    StructuredRequest::new(
        "gpt-4o-mini",
        vec![Message::new(
            Role::User,
            "Extract the person: Ada, thirty-six.",
        )],
    )
    .with_schema("person", person_schema())
}

/// The text of every message of a recorded Chat Completions request, one string each.
fn sent_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn a_non_conforming_reply_is_repaired_with_the_errors_sent_back() {
    let fake = FakeOpenAi::start(vec![
        Reply::json(chat::completion(
            r#"{"name": "Ada", "age": "thirty-six"}"#,
            30,
            10,
        )),
        Reply::json(chat::completion(r#"{"name": "Ada", "age": 36}"#, 80, 10)),
    ])
    .await;
    let reply = request().run(&client(&fake)).await.unwrap();
    assert_eq!(reply.value, Some(json!({"name": "Ada", "age": 36})));
    assert_eq!(reply.attempts, 2);
    assert_eq!(reply.usage.calls, 2);
    assert_eq!(reply.usage.prompt_tokens, 110);
    // gpt-4o-mini is in the built-in price table, so both calls are priced.
    assert_eq!(reply.usage.unpriced_calls, 0);
    assert!(reply.usage.cost_usd > 0.0);

    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    for request in &sent {
        assert_eq!(request.body["response_format"]["type"], "json_schema");
        assert_eq!(
            request.body["response_format"]["json_schema"]["name"],
            "person"
        );
        assert_eq!(
            request.body["response_format"]["json_schema"]["schema"],
            person_schema()
        );
    }
    let first = sent_texts(&sent[0].body);
    let second = sent_texts(&sent[1].body);
    assert_eq!(first.len(), 1);
    assert_eq!(second.len(), 3);
    assert_eq!(sent[1].body["messages"][1]["role"], "assistant");
    assert_eq!(second[1], r#"{"name": "Ada", "age": "thirty-six"}"#);
    assert_eq!(sent[1].body["messages"][2]["role"], "user");
    assert!(
        second[2].contains("does not conform to the JSON Schema `person`"),
        "{}",
        second[2]
    );
    assert!(second[2].contains("- /age: "), "{}", second[2]);
    assert!(second[2].contains("number"), "{}", second[2]);
}

#[tokio::test]
async fn repairs_run_out_with_a_clear_error() {
    let fake = FakeOpenAi::start(vec![
        Reply::json(chat::completion("Sure, here it is: Ada, 36", 1, 1)),
        Reply::json(chat::completion(r#"{"name": "Ada"}"#, 1, 1)),
        Reply::json(chat::completion(r#"{"name": "Ada", "age": 36}"#, 1, 1)),
    ])
    .await;
    let error = request()
        .with_max_repairs(1)
        .run(&client(&fake))
        .await
        .unwrap_err();
    let StructuredError::NonConforming {
        schema,
        attempts,
        violations,
        reply,
    } = &error
    else {
        panic!("{error:?}");
    };
    assert_eq!(schema, "person");
    assert_eq!(*attempts, 2);
    assert_eq!(reply, r#"{"name": "Ada"}"#);
    assert_eq!(violations.len(), 1);
    assert!(violations[0].message.contains("age"), "{violations:?}");
    assert!(error.to_string().contains("after 2 attempt(s)"), "{error}");
    // The first reply was not JSON: the repair message said so.
    let second = sent_texts(&fake.requests()[1].body);
    assert!(second[2].contains("not JSON"), "{}", second[2]);
    assert_eq!(fake.remaining(), 1);
}

#[tokio::test]
async fn harmony_final_answers_are_validated_and_repaired_too() {
    let fake = FakeOpenAi::start(vec![
        Reply::completions(vec![completion::text(
            "<|channel|>analysis<|message|>Age is 36.<|end|><|start|>assistant<|channel|>final<|message|>{\"name\": \"Ada\", \"age\": \"36\"}",
        )]),
        Reply::completions(vec![completion::text(
            "<|channel|>final<|message|>{\"name\": \"Ada\", \"age\": 36}<|return|>",
        )]),
    ])
    .await;
    let client = HarmonyClient::new(EndpointConfig::new(fake.base_url()));
    let reply = request().run(&client).await.unwrap();
    assert_eq!(reply.value, Some(json!({"name": "Ada", "age": 36})));
    assert_eq!(reply.attempts, 2);
    let ids: Vec<u32> = fake.requests()[1].body["prompt"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let prompt = chorus_harmony::encoding().decode_utf8(&ids).unwrap();
    assert!(prompt.contains("# Response Formats"), "{prompt}");
    assert!(prompt.contains("- /age: "), "{prompt}");
}

fn greeting_request() -> StructuredRequest {
    StructuredRequest::new(
        "gpt-oss-20b",
        vec![Message::with_parts(
            Role::User,
            vec![
                ContentPart::text("Write a greeting for the person in the input."),
                ContentPart::Data(DataPart {
                    kind: Some("input".into()),
                    data: json!({"style": "warm"}),
                    schema: Some(json!({"type": "object",
                        "properties": {"name": {"type": "string"}, "style": {"type": "string"}},
                        "required": ["name"]})),
                    description: Some("The person to greet".into()),
                    ..DataPart::default()
                }),
            ],
        )],
    )
    .with_schema(
        "greeting",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    )
}

#[tokio::test]
async fn a_batch_runs_each_input_in_its_own_instance() {
    let names = ["Ada", "Grace", "Linus", "Barbara"];
    let replies = names
        .iter()
        .map(|_| {
            Reply::json(chat::completion(r#"{"text": "Hello!"}"#, 5, 3))
                .first_delay(Duration::from_millis(300))
        })
        .collect();
    let fake = FakeOpenAi::start(replies).await;
    let inputs: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
    let results = greeting_request()
        .run_batch(&client(&fake), &inputs, 4)
        .await;
    // The four requests overlapped at the server (each waited 300 ms there).
    assert!(fake.max_in_flight() >= 3, "{}", fake.max_in_flight());
    assert_eq!(results.len(), 4);
    for result in &results {
        assert_eq!(
            result.as_ref().unwrap().value,
            Some(json!({"text": "Hello!"}))
        );
    }
    let sent = fake.requests();
    assert_eq!(sent.len(), 4);
    let mut instances = BTreeSet::new();
    for request in &sent {
        let text = sent_texts(&request.body).join("\n");
        assert_eq!(text.matches("## Data: ¶input").count(), 1, "{text}");
        let mine: Vec<&&str> = names
            .iter()
            .filter(|n| text.contains(&format!("\"{n}\"")))
            .collect();
        assert_eq!(mine.len(), 1, "one person per request: {text}");
        let index = names.iter().position(|n| n == mine[0]).unwrap();
        assert!(
            text.contains(&format!("## Data: ¶input (_instance {index})")),
            "{text}"
        );
        assert!(
            text.contains("\"style\": \"warm\""),
            "defaults kept: {text}"
        );
        instances.insert(index);
    }
    assert_eq!(instances.len(), 4);
}

#[tokio::test]
async fn a_batch_reports_a_bad_input_without_sending_it() {
    let fake = FakeOpenAi::start(vec![Reply::json(chat::completion(
        r#"{"text": "Hi"}"#,
        1,
        1,
    ))])
    .await;
    let inputs = [json!({"name": "Ada"}), json!({"nom": "Grace"})];
    let results = greeting_request()
        .run_batch(&client(&fake), &inputs, 2)
        .await;
    assert!(results[0].is_ok());
    let Err(StructuredError::Input {
        instance,
        violations,
    }) = &results[1]
    else {
        panic!("{:?}", results[1]);
    };
    assert_eq!(instance, &json!(1));
    assert!(violations[0].message.contains("name"), "{violations:?}");
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn a_loop_keeps_its_state_between_steps() {
    let fake = FakeOpenAi::start(vec![
        Reply::json(chat::completion(
            r#"{"count": 1, "notes": ["first"]}"#,
            1,
            1,
        )),
        Reply::json(chat::completion(r#"{"count": 2, "done": true}"#, 1, 1)),
        Reply::json(chat::completion(r#"{"count": 3}"#, 1, 1)),
    ])
    .await;
    let request = StructuredRequest::new(
        "gpt-4o-mini",
        vec![Message::with_parts(
            Role::User,
            vec![
                ContentPart::text("Count up by one; set done at 2."),
                ContentPart::Data(DataPart {
                    kind: Some("state".into()),
                    data: json!({"count": 0, "done": false}),
                    description: Some("The counter".into()),
                    ..DataPart::default()
                }),
            ],
        )],
    )
    .with_schema("patch", json!({"type": "object"}));
    let mut looped = StateLoop::new(request);
    let done = looped
        .run_until(&client(&fake), 5, |state| state["done"] == json!(true))
        .await
        .unwrap();
    assert!(done);
    assert_eq!(looped.steps, 2);
    assert_eq!(
        looped.state,
        json!({"count": 2, "done": true, "notes": ["first"]})
    );
    assert_eq!(looped.usage.calls, 2);
    let sent = fake.requests();
    assert_eq!(sent.len(), 2);
    let first = sent_texts(&sent[0].body).join("\n");
    let second = sent_texts(&sent[1].body).join("\n");
    assert!(first.contains("\"count\": 0"), "{first}");
    assert!(second.contains("\"count\": 1"), "{second}");
    assert!(second.contains("\"first\""), "{second}");
    assert_eq!(second.matches("## Data: ¶state").count(), 1, "{second}");
}
