//! The LLM agent on gpt-oss through the Harmony client (raw completions) against the fake server:
//! a commentary tool call, a final answer missing its return token, and a handoff whose packet
//! keeps the analysis channel out.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chorus_agent::agents::{FlowAgent, Item, LlmAgent, LlmAgentConfig};
use chorus_agent::model::{EndpointConfig, HarmonyClient};
use chorus_agent::tools::{FunctionTool, ToolOutput, ToolRegistry};
use chorus_core::{Kind, Message, Role, Validator};
use chorus_harmony::tokens;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use support::fake_openai::{FakeOpenAi, Reply, completion};

#[derive(Deserialize, JsonSchema)]
struct City {
    /// City.
    city: String,
}

fn reply(text: &str, stop: Option<u32>) -> Reply {
    let mut chunks = completion::text_in_pieces(text, 9);
    chunks.push(completion::finish(
        if stop.is_some() { "stop" } else { "length" },
        stop,
    ));
    chunks.push(completion::usage(200, 30));
    Reply::completions(chunks)
}

fn agent(fake: &FakeOpenAi, runs: Arc<AtomicUsize>, handoffs: &[&str]) -> LlmAgent {
    let mut tools = ToolRegistry::new();
    tools
        .register(Arc::new(FunctionTool::new(
            "forecast",
            "Weather",
            move |a: City| {
                let runs = runs.clone();
                async move {
                    runs.fetch_add(1, Ordering::SeqCst);
                    ToolOutput::success(json!({"city": a.city, "sky": "sunny"}))
                }
            },
        )))
        .unwrap();
    let client = HarmonyClient::new(
        EndpointConfig::new(fake.base_url()).with_retries(1, Duration::from_millis(5)),
    );
    let mut config = LlmAgentConfig::new("desk", "You are a weather desk.", "gpt-oss-20b");
    config.tools = vec!["forecast".into()];
    config.handoffs = handoffs.iter().map(|h| h.to_string()).collect();
    LlmAgent::new(config, Arc::new(client), tools).unwrap()
}

fn user(text: &str) -> Item {
    let mut m = Message::new(Role::User, text);
    m.name = Some("user".into());
    Item::Message(m)
}

#[tokio::test]
async fn a_harmony_tool_call_then_a_final_answer_without_its_return_token() {
    let fake = FakeOpenAi::start(vec![
        reply(
            "<|channel|>analysis<|message|>PRIVATE-THOUGHT: need the tool.<|end|><|start|>assistant<|channel|>commentary to=functions.forecast <|constrain|>json<|message|>{\"city\":\"Paris\"}",
            Some(tokens::CALL),
        ),
        reply("<|channel|>analysis<|message|>Got it.<|end|><|start|>assistant<|channel|>final<|message|>Sunny in Paris.", None),
    ])
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(&fake, runs.clone(), &[]);
    let out = agent.handle(&user("Paris?"), "t1").await.unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].text(), "Sunny in Paris.");
    assert!(
        !out[0].to_json().to_string().contains("PRIVATE"),
        "no analysis in the reply"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let ids: Vec<u32> = fake.requests()[1].body["prompt"]
        .as_array()
        .expect("prompt as token ids")
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    let second = chorus_harmony::encoding().decode_utf8(&ids).unwrap();
    assert!(
        second.contains("functions.forecast") && second.contains("sunny"),
        "the tool result is in the prompt"
    );
    let usage = agent.usage();
    assert_eq!(
        (usage.calls, usage.prompt_tokens, usage.completion_tokens),
        (2, 400, 60)
    );
}

#[tokio::test]
async fn a_harmony_handoff_packet_validates_and_keeps_the_analysis_out() {
    let args = json!({"handoff_type": "TASK_TRANSFER", "summary": "User wants a 10-day forecast.",
        "completed_steps": ["checked today's weather"], "artifacts": {"chart": "https://example.com/c.png"},
        "data": {"task_description": "Give a 10-day forecast for Paris"}});
    let fake = FakeOpenAi::start(vec![reply(
        &format!(
            "<|channel|>analysis<|message|>PRIVATE-THOUGHT: not my job.<|end|><|start|>assistant<|channel|>commentary to=functions.transfer_to_forecaster <|constrain|>json<|message|>{args}"
        ),
        Some(tokens::CALL),
    )])
    .await;
    let agent = agent(&fake, Arc::new(AtomicUsize::new(0)), &["forecaster"]);
    let out = agent
        .handle(&user("10-day forecast for Paris?"), "t2")
        .await
        .unwrap();
    let [Item::Handoff(packet)] = &out[..] else {
        panic!("one handoff expected: {out:?}")
    };
    let value = serde_json::to_value(packet).unwrap();
    let report = Validator::standard().validate_value(&value, Some(Kind::Handoff));
    assert!(report.is_valid(), "{:?}", report.problems);
    assert_eq!(
        packet.payload.data["completed_steps"],
        json!(["checked today's weather"])
    );
    assert_eq!(
        packet.payload.data["artifacts"]["chart"],
        "https://example.com/c.png"
    );
    assert!(!value.to_string().contains("PRIVATE"));
}
