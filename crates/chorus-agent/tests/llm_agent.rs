//! The LLM agent against the fake OpenAI-compatible server: tool loop, self-repair, confirmation,
//! handoffs as tools, trimming under a budget, usage and latency.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chorus_agent::agents::{FlowAgent, Item, LlmAgent, LlmAgentConfig};
use chorus_agent::confirm::{ConfirmationState, Confirmations, MemoryConfirmations};
use chorus_agent::model::{EndpointConfig, OpenAiChatClient};
use chorus_agent::tools::{FunctionTool, ToolOutput, ToolRegistry};
use chorus_core::{Kind, Message, Role, Validator};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use support::fake_openai::{FakeOpenAi, Reply, chat};

#[derive(Deserialize, JsonSchema)]
struct Forecast {
    /// City.
    city: String,
    /// Days ahead, 1 to 7.
    #[schemars(range(min = 1, max = 7))]
    days: u8,
}

fn registry(runs: Arc<AtomicUsize>, confirm: Option<Arc<MemoryConfirmations>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    if let Some(store) = confirm.clone() {
        registry = registry.with_confirmations(store);
    }
    let tool = FunctionTool::new("forecast", "Weather forecast", move |a: Forecast| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            ToolOutput::success(
                json!({"status": "success", "city": a.city, "days": a.days, "sky": "sunny"}),
            )
        }
    });
    let tool = if confirm.is_some() {
        tool.with_confirmation()
    } else {
        tool
    };
    registry.register(Arc::new(tool)).unwrap();
    registry
}

fn agent(
    fake: &FakeOpenAi,
    tools: ToolRegistry,
    edit: impl FnOnce(&mut LlmAgentConfig),
) -> LlmAgent {
    let client = OpenAiChatClient::new(
        EndpointConfig::new(fake.base_url())
            .with_retries(1, Duration::from_millis(10))
            .with_timeout(Duration::from_secs(10)),
    );
    let mut config = LlmAgentConfig::new("assistant", "You are a terse weather desk.", "gpt-test");
    config.tools = vec!["forecast".into()];
    edit(&mut config);
    LlmAgent::new(config, Arc::new(client), tools).unwrap()
}

fn user(text: &str) -> Item {
    let mut m = Message::new(Role::User, text);
    m.name = Some("user".into());
    m.id = Some("m1".into());
    m.recipient = Some("assistant".into());
    Item::Message(m)
}

fn call(id: &str, name: &str, args: &str) -> Reply {
    Reply::call(id, name, args, (10, 5))
}

fn text(t: &str) -> Reply {
    Reply::answer(t, (20, 3))
}

/// The tool messages of a recorded request body.
fn tool_messages(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_tool_call_then_its_result_then_the_final_answer_with_usage_and_latency() {
    let fake = FakeOpenAi::start(vec![
        call("call_1", "forecast", r#"{"city":"Paris","days":2}"#),
        text("Sunny in Paris."),
    ])
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(&fake, registry(runs.clone(), None), |_| {});
    let out = agent
        .handle(&user("Weather in Paris?"), "t1")
        .await
        .unwrap();
    let [Item::Message(reply)] = &out[..] else {
        panic!("one message expected: {out:?}")
    };
    assert_eq!(reply.text(), "Sunny in Paris.");
    assert_eq!(reply.recipient.as_deref(), Some("user"));
    assert_eq!(reply.channel.as_deref(), Some("final"));
    let meta = reply.metadata.as_ref().unwrap();
    assert_eq!(meta.token_usage.as_ref().unwrap().prompt_tokens, Some(20));
    assert!(meta.latency_ms.as_ref().unwrap().total_time.is_some());
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let usage = agent.usage();
    assert_eq!(
        (usage.calls, usage.prompt_tokens, usage.completion_tokens),
        (2, 30, 8)
    );
    assert!(usage.latency_ms > 0.0);
    let requests = fake.requests();
    assert_eq!(requests[0].body["tools"][0]["function"]["name"], "forecast");
    let results = tool_messages(&requests[1].body);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["tool_call_id"], "call_1");
    assert!(results[0]["content"].as_str().unwrap().contains("sunny"));
}

#[tokio::test]
async fn a_tool_error_is_followed_by_a_repaired_call() {
    let fake = FakeOpenAi::start(vec![
        call("call_1", "forecast", r#"{"city":"Paris","days":30}"#),
        call("call_2", "forecast", r#"{"city":"Paris","days":3}"#),
        text("Sunny."),
    ])
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(&fake, registry(runs.clone(), None), |_| {});
    agent
        .handle(&user("Paris in a month?"), "t1")
        .await
        .unwrap();
    let error = tool_messages(&fake.requests()[1].body)[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let error: Value = serde_json::from_str(&error).unwrap();
    assert_eq!(error["status"], "error");
    assert_eq!(error["error_type"], "InvalidArguments");
    assert!(
        error["message"].as_str().unwrap().contains("at /days"),
        "{error}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1, "only the repaired call ran");
}

#[tokio::test]
async fn a_confirmation_halt_then_approval_runs_the_exact_call_once() {
    let fake = FakeOpenAi::start(vec![
        call("call_9", "forecast", r#"{"city":"Oslo","days":1}"#),
        text("This needs your approval. Shall I go ahead?"),
        text("Done: sunny in Oslo."),
        text("Nothing else to do."),
    ])
    .await;
    let runs = Arc::new(AtomicUsize::new(0));
    let store = Arc::new(MemoryConfirmations::new());
    let agent = agent(&fake, registry(runs.clone(), Some(store.clone())), |_| {});
    let out = agent.handle(&user("Oslo tomorrow?"), "t1").await.unwrap();
    assert!(out[0].text().contains("approval"));
    let halted: Value = serde_json::from_str(
        tool_messages(&fake.requests()[1].body)[0]["content"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(halted["status"], "halted");
    assert_eq!(halted["reason"], "human_confirmation_required");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let pending = store.list(Some(ConfirmationState::Pending)).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "call_9");
    store
        .decide(&pending[0].id, true, "alice", None)
        .await
        .unwrap();

    let out = agent.handle(&user("Yes, go ahead."), "t1").await.unwrap();
    assert_eq!(out[0].text(), "Done: sunny in Oslo.");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the approved call ran");
    let results = tool_messages(&fake.requests()[2].body);
    let resumed = results.last().unwrap();
    assert_eq!(resumed["tool_call_id"], "call_9");
    assert!(resumed["content"].as_str().unwrap().contains("sunny"));

    agent.handle(&user("Thanks."), "t1").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "an approval runs once");
    assert_eq!(
        store
            .list(Some(ConfirmationState::Consumed))
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn transfer_to_an_agent_produces_a_validated_packet_without_the_analysis() {
    let bad = r#"{"handoff_type":"ESCALATION","summary":"Hourly drops.","data":{"issue_category":"NETWORK","severity":"HIGH"}}"#;
    let good = r#"{"handoff_type":"ESCALATION","summary":"Customer John Doe: internet drops hourly.","completed_steps":["router restarted"],"artifacts":{"modem_log":"file:///logs/123"},"constraints":["answer within 2 hours"],"data":{"issue_category":"NETWORK_CONNECTIVITY","severity":"HIGH","customer_info":{"user_id":"john@example.com","name":"John Doe"},"technical_details":{"symptoms":"hourly drops"}}}"#;
    let fake = FakeOpenAi::start(vec![
        Reply::chat(vec![
            chat::role(),
            chat::reasoning("SECRET-REASONING about the customer"),
            chat::call_start(0, "call_t1", "transfer_to_technical_support", bad),
            chat::finish("tool_calls"),
        ]),
        call("call_t2", "transfer_to_technical_support", good),
    ])
    .await;
    let agent = agent(&fake, ToolRegistry::new(), |c| {
        c.tools.clear();
        c.handoffs = vec!["technical_support".into()];
    });
    let out = agent
        .handle(&user("My internet drops every hour."), "task-7")
        .await
        .unwrap();
    let [Item::Handoff(packet)] = &out[..] else {
        panic!("one handoff expected: {out:?}")
    };
    let repair = tool_messages(&fake.requests()[1].body)[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        repair.contains("InvalidHandoff") && repair.contains("/payload/data"),
        "{repair}"
    );

    let value = serde_json::to_value(packet).unwrap();
    let report = Validator::standard().validate_value(&value, Some(Kind::Handoff));
    assert!(report.is_valid(), "{:?}", report.problems);
    assert_eq!(packet.metadata.sender_id, "assistant");
    assert_eq!(packet.metadata.recipient_id.ids(), ["technical_support"]);
    assert_eq!(packet.metadata.task_id, "task-7");
    assert_eq!(
        packet.context.historical_data_summary.as_deref(),
        Some("Customer John Doe: internet drops hourly.")
    );
    let actions: Vec<&str> = packet
        .context
        .previous_actions
        .iter()
        .map(|a| a.details.as_str())
        .collect();
    assert_eq!(actions, ["router restarted", "modem_log: file:///logs/123"]);
    assert_eq!(
        packet.instructions.constraints.as_ref().unwrap()["rules"][0],
        "answer within 2 hours"
    );
    assert!(
        !value.to_string().contains("SECRET"),
        "analysis stays with its agent"
    );
    assert!(
        agent
            .history("task-7")
            .iter()
            .any(|m| serde_json::to_string(m).unwrap().contains("SECRET"))
    );
    assert_eq!(
        tool_names(&fake.requests()[0].body),
        ["transfer_to_technical_support"]
    );
}

#[tokio::test]
async fn the_receiver_sees_the_packet_as_data_and_answers_with_a_status_update() {
    let fake = FakeOpenAi::start(vec![text("Root cause found: firmware; fixed.")]).await;
    let receiver = agent(&fake, ToolRegistry::new(), |c| {
        c.name = "technical_support".into();
        c.tools.clear();
    });
    let packet = {
        let mut d = chorus_agent::agents::PacketDraft::new(
            "customer_service",
            "technical_support",
            chorus_core::HandoffType::Escalation,
            json!({"issue_category": "NETWORK_CONNECTIVITY", "severity": "HIGH",
                   "customer_info": {"user_id": "u1", "name": "John Doe"}, "technical_details": {"isp": "GlobalNet"}})
                .as_object().unwrap().clone(),
            "task-8",
        );
        d.summary = Some("Hourly drops".into());
        d.build().unwrap()
    };
    let out = receiver
        .handle(&Item::Handoff(packet.clone()), "task-8")
        .await
        .unwrap();
    let body = fake.requests()[0].body.to_string();
    assert!(
        body.contains("GlobalNet") && body.contains(&packet.metadata.message_id),
        "the packet is rendered for the model"
    );
    assert!(tool_names(&fake.requests()[0].body).contains(&"reply_to_sender".to_owned()));
    let [Item::Handoff(status)] = &out[..] else {
        panic!("a status update expected: {out:?}")
    };
    assert_eq!(status.payload.handoff_type.as_str(), "STATUS_UPDATE");
    assert_eq!(status.metadata.recipient_id.ids(), ["customer_service"]);
    assert_eq!(
        status.payload.data["in_response_to"],
        json!(packet.metadata.message_id)
    );
    assert_eq!(status.payload.data["status"], "COMPLETED");
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"].as_array().map_or(Vec::new(), |t| {
        t.iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    })
}

#[tokio::test]
async fn trimming_under_a_small_budget_keeps_calls_with_their_results() {
    let mut script = Vec::new();
    for turn in 0..6 {
        script.push(call(
            &format!("call_{turn}"),
            "forecast",
            r#"{"city":"Paris","days":1}"#,
        ));
        script.push(text("Sunny."));
    }
    let fake = FakeOpenAi::start(script).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent(&fake, registry(runs, None), |c| {
        c.context_budget = Some(700)
    });
    let long =
        "Please tell me the weather in Paris again, with all the details you can find. ".repeat(5);
    for _ in 0..6 {
        agent.handle(&user(&long), "t1").await.unwrap();
    }
    let requests = fake.requests();
    let last = requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        last.len() < agent.history("t1").len(),
        "older turns were trimmed: {} of {}",
        last.len(),
        agent.history("t1").len()
    );
    assert_eq!(last[0]["role"], "system", "the personality is kept");
    for request in &requests {
        let messages = request.body["messages"].as_array().unwrap();
        for (i, m) in messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m["role"] == "tool")
        {
            let id = &m["tool_call_id"];
            let called = messages[..i].iter().any(|a| {
                a["tool_calls"]
                    .as_array()
                    .is_some_and(|calls| calls.iter().any(|c| &c["id"] == id))
            });
            assert!(called, "tool result {id} sent without its call");
        }
        for (i, m) in messages.iter().enumerate() {
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                assert!(
                    messages[i + 1..]
                        .iter()
                        .any(|r| r["tool_call_id"] == c["id"]),
                    "call {} sent without its result",
                    c["id"]
                );
            }
        }
    }
}
