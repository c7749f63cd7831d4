//! Whole flows on the embedded bus: the support-desk examples (rule agents offline, LLM agents
//! against the fake OpenAI server) and failure handling.

mod support;

use std::sync::Arc;
use std::time::Duration;

use chorus_agent::agents::Item;
use chorus_agent::confirm::MemoryConfirmations;
use chorus_agent::flow::{Flow, FlowError, FlowSpec};
use chorus_agent::journal::{Book, BusJournal, Journal};
use chorus_bus::{Backend, Bus, BusConfig, MemoryBus};
use chorus_core::{Kind, Validator};
use support::desk::{SUPPORT_DESK_CHAIN, assert_coherent_story, handoff_chain};

fn example(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap()
}

async fn run(text: &str) -> (Result<chorus_agent::flow::FlowReport, FlowError>, Vec<Item>) {
    let spec = FlowSpec::parse(text).unwrap();
    let flow = Flow::new(spec, None, Arc::new(MemoryConfirmations::new())).unwrap();
    let mut seen = Vec::new();
    let result = flow.run(&mut |item: &Item| seen.push(item.clone())).await;
    (result, seen)
}

#[tokio::test]
async fn support_desk_runs_the_escalation_chain_with_valid_packets() {
    let (result, seen) = run(&example("support-desk.toml")).await;
    let report = result.unwrap();
    assert_eq!(chain(&seen), SUPPORT_DESK_CHAIN);
    for item in &seen {
        let report = Validator::standard().validate_value(&item.to_json(), None);
        assert!(
            report.is_valid(),
            "{:?}: {:?}",
            item.describe(),
            report.problems
        );
        if let Item::Handoff(h) = item {
            let r = Validator::standard().validate_value(&item.to_json(), Some(Kind::Handoff));
            assert!(r.is_valid(), "{:?}", r.problems);
            assert_eq!(h.metadata.task_id, seen_task(&seen));
        }
    }
    let last = report.outputs.last().unwrap();
    assert!(last.text().contains("Root cause"), "{}", last.text());
    assert_eq!(last.recipients(), ["customer_john"]);
    assert_coherent_story(&seen.iter().map(Item::to_json).collect::<Vec<_>>());
}

/// The handoffs among what a flow sent, as `sender>recipient:TYPE`.
fn chain(seen: &[Item]) -> Vec<String> {
    handoff_chain(&seen.iter().map(Item::to_json).collect::<Vec<_>>())
}

/// Rule agents, each replying with the text it got followed by its suffix.
fn replying_agents(agents: &[(&str, &str)]) -> String {
    agents
        .iter()
        .map(|(name, suffix)| {
            format!(
                "[[agents]]\nname = \"{name}\"\nkind = \"rule\"\n[[agents.rules]]\n\
                 [[agents.rules.then]]\naction = \"reply\"\ntext = \"${{text}}{suffix}\"\n"
            )
        })
        .collect()
}

fn seen_task(seen: &[Item]) -> String {
    seen.iter()
        .find_map(|i| match i {
            Item::Handoff(h) => Some(h.metadata.task_id.clone()),
            Item::Message(_) => None,
        })
        .unwrap()
}

fn failing_desk(log: &std::path::Path, strategy: &str) -> String {
    format!(
        r#"name = "failing"
[input]
text = "the internet is down"
[[tools]]
name = "diagnose"
kind = "command"
program = "sh"
args = ["-c", "echo attempt >> {{log}}; echo broken >&2; exit 3"]
parameters = {{ type = "object", properties = {{ log = {{ type = "string" }} }}, required = ["log"] }}

[[agents]]
name = "front"
kind = "rule"
[[agents.rules]]
on = "message"
[[agents.rules.then]]
action = "handoff"
to = "support"
handoff_type = "TASK_TRANSFER"
data = {{ task_description = "${{text}}" }}
{strategy}

[[agents.rules]]
on = "NOTIFICATION"
[[agents.rules.then]]
action = "reply"
to = "user"
text = "${{input.payload.data.message}}"

[[agents]]
name = "support"
kind = "rule"
tools = ["diagnose"]
[[agents.rules]]
[[agents.rules.then]]
action = "tool"
tool = "diagnose"
arguments = {{ log = "{log}" }}
[[agents.rules.then]]
action = "reply"
text = "${{tools.diagnose.output}}"

[[agents]]
name = "expert"
kind = "rule"
[[agents.rules]]
on = "TASK_TRANSFER"
[[agents.rules.then]]
action = "reply"
to = "user"
text = "Expert took over after: ${{input.context.previous_actions.0.details}}"
"#,
        log = log.display()
    )
}

#[tokio::test]
async fn failure_handling_strategy_retries_then_escalates_and_runs_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("attempts.log");
    let strategy = r#"instructions = { failure_handling_strategy = { retry_count = 2, escalate_to = "expert", fallback_action = "notify_customer_of_delay" } }"#;
    let (result, seen) = run(&failing_desk(&log, strategy)).await;
    let report = result.unwrap();
    assert_eq!(
        std::fs::read_to_string(&log).unwrap().lines().count(),
        3,
        "one attempt and two retries"
    );
    let forwarded = seen
        .iter()
        .find_map(|i| match i {
            Item::Handoff(h) if h.metadata.recipient_id.ids() == ["expert"] => Some(h.clone()),
            _ => None,
        })
        .expect("the task was escalated to the expert");
    assert_eq!(forwarded.metadata.sender_id, "support");
    assert_eq!(
        forwarded.context.previous_actions[0].action_type,
        "FAILED_ATTEMPT"
    );
    assert!(
        forwarded.context.previous_actions[0]
            .details
            .contains("CommandFailed")
    );
    let notice = seen
        .iter()
        .find(|i| i.handoff_type() == Some("NOTIFICATION"))
        .expect("the sender heard about the fallback action");
    assert_eq!(notice.recipients(), ["front"]);
    let texts: Vec<String> = report.outputs.iter().map(Item::text).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("Expert took over after: support could not complete")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("notify_customer_of_delay")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn without_a_strategy_a_failing_agent_fails_the_flow() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("attempts.log");
    let (result, _) = run(&failing_desk(&log, "")).await;
    let error = result.unwrap_err().to_string();
    assert!(
        error.contains("tool `diagnose` failed: CommandFailed"),
        "{error}"
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
}

#[tokio::test]
async fn a_rule_uses_a_tool_result_in_its_reply_and_the_first_matching_rule_wins() {
    let flow = r#"name = "tool-rule"
[input]
text = "ping"
[[tools]]
name = "say"
kind = "command"
program = "echo"
args = ["-n", "pong {n}"]
parameters = { type = "object", properties = { n = { type = "integer" } }, required = ["n"] }
[[agents]]
name = "a"
kind = "rule"
tools = ["say"]
[[agents.rules]]
contains = "nothing"
[[agents.rules.then]]
action = "reply"
text = "wrong rule"
[[agents.rules]]
contains = "PING"
[[agents.rules.then]]
action = "tool"
tool = "say"
arguments = { n = 7 }
[[agents.rules.then]]
action = "reply"
text = "${tools.say.output}!"
"#;
    let (result, _) = run(flow).await;
    let outputs = result.unwrap().outputs;
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].text(), "pong 7!");
    assert_eq!(outputs[0].recipients(), ["user"]);
}

#[tokio::test]
async fn a_sequential_pipeline_feeds_each_reply_to_the_next_agent() {
    let flow = format!(
        "name = \"pipe\"\nmode = \"sequential\"\norder = [\"second\", \"first\"]\n\
         [input]\ntext = \"start\"\n{}",
        replying_agents(&[("first", " > first"), ("second", " > second")])
    );
    let (result, seen) = run(&flow).await;
    let report = result.unwrap();
    assert_eq!(report.outputs[0].text(), "start > second > first");
    assert_eq!(seen.len(), 3, "the input and two replies are observed");
}

#[tokio::test]
async fn support_desk_llm_runs_the_chain_against_a_fake_endpoint() {
    use chorus_agent::flow::ModelFactory;
    use chorus_agent::model::{EndpointConfig, ModelClient, OpenAiChatClient};
    use support::fake_openai::{FakeOpenAi, Reply};

    let call = |name: &str, args: serde_json::Value, usage: (u64, u64)| {
        Reply::call("call_x", name, &args.to_string(), usage)
    };
    let text = |t: &str, usage: (u64, u64)| Reply::answer(t, usage);
    let escalation = |severity: &str| {
        serde_json::json!({
        "issue_category": "NETWORK_CONNECTIVITY", "severity": severity,
        "customer_info": {"user_id": "john.doe@example.com", "name": "John Doe"},
        "technical_details": {"router_model": "RouterX-Pro", "isp": "GlobalNet"}})
    };
    // Which agent makes each scripted call, with its (prompt, completion) tokens: distinct
    // counts so a call credited to the wrong agent changes that agent's totals.
    let script = [
        ("customer_service", (90, 21)),
        ("technical_support", (110, 22)),
        ("customer_service", (95, 23)),
        ("technical_support", (105, 24)),
        ("level3_expert", (100, 15)),
        ("technical_support", (120, 16)),
        ("customer_service", (80, 17)),
    ];
    let fake = FakeOpenAi::start(vec![
        call("transfer_to_technical_support", serde_json::json!({"handoff_type": "ESCALATION", "summary": "Hourly drops", "data": escalation("HIGH")}), script[0].1),
        call("reply_to_sender", serde_json::json!({"handoff_type": "REQUEST_INFORMATION", "summary": "Need logs", "data": {"requested_info_keys": ["modem_logs", "outage_times"]}}), script[1].1),
        call("reply_to_sender", serde_json::json!({"handoff_type": "PROVIDE_INFORMATION", "summary": "Logs", "data": {"provided_info": {"modem_logs": "log_file_id_123", "outage_times": ":05 hourly"}}}), script[2].1),
        call("transfer_to_level3_expert", serde_json::json!({"handoff_type": "ESCALATION", "summary": "DHCP renewals fail", "data": escalation("CRITICAL")}), script[3].1),
        text("Root cause: router firmware drops the DHCP lease; firmware updated.", script[4].1),
        text("Level 3 fixed it: firmware updated.", script[5].1),
        text("Good news: your connection is fixed.", script[6].1),
    ])
    .await;
    let base = fake.base_url();
    let factory: ModelFactory = Arc::new(move |_spec| {
        let client: Arc<dyn ModelClient> =
            Arc::new(OpenAiChatClient::new(EndpointConfig::new(base.clone())));
        Ok(client)
    });
    let spec = FlowSpec::parse(&example("support-desk-llm.toml")).unwrap();
    let without = Flow::new(spec.clone(), None, Arc::new(MemoryConfirmations::new()));
    assert!(
        matches!(&without, Err(FlowError::Spec(e)) if e.message.contains("CHORUS_MODEL_BASE_URL"))
    );
    let flow = Flow::new(spec, Some(&factory), Arc::new(MemoryConfirmations::new())).unwrap();
    let mut seen = Vec::new();
    let report = flow
        .run(&mut |item: &Item| seen.push(item.clone()))
        .await
        .unwrap();
    assert_eq!(
        chain(&seen),
        [
            "customer_service>technical_support:ESCALATION",
            "technical_support>customer_service:REQUEST_INFORMATION",
            "customer_service>technical_support:PROVIDE_INFORMATION",
            "technical_support>level3_expert:ESCALATION",
            "level3_expert>technical_support:STATUS_UPDATE",
            "technical_support>customer_service:STATUS_UPDATE",
        ]
    );
    for item in &seen {
        let r = Validator::standard().validate_value(&item.to_json(), None);
        assert!(r.is_valid(), "{}: {:?}", item.describe(), r.problems);
    }
    assert_eq!(report.outputs.len(), 1);
    assert_eq!(
        report.outputs[0].text(),
        "Good news: your connection is fixed."
    );
    assert_eq!(report.outputs[0].recipients(), ["customer_john"]);
    assert_eq!((report.usage.calls, report.usage.prompt_tokens), (7, 700));
    // Per agent: that agent's scripted calls and tokens; the flow total is their sum.
    let mut expected: std::collections::BTreeMap<&str, (u64, u64, u64)> = Default::default();
    for (agent, (prompt, completion)) in script {
        let e = expected.entry(agent).or_default();
        *e = (e.0 + 1, e.1 + prompt, e.2 + completion);
    }
    let per_agent: std::collections::BTreeMap<&str, (u64, u64, u64)> = report
        .per_agent
        .iter()
        .map(|(name, t)| {
            (
                name.as_str(),
                (t.calls, t.prompt_tokens, t.completion_tokens),
            )
        })
        .collect();
    assert_eq!(per_agent, expected);
    let (calls, prompt, completion) = expected
        .values()
        .fold((0, 0, 0), |a, e| (a.0 + e.0, a.1 + e.1, a.2 + e.2));
    assert_eq!(
        (
            report.usage.calls,
            report.usage.prompt_tokens,
            report.usage.completion_tokens,
            report.usage.total_tokens
        ),
        (calls, prompt, completion, prompt + completion)
    );
    let agent_cost: f64 = report.per_agent.values().map(|t| t.cost_usd).sum();
    assert!((report.usage.cost_usd - agent_cost).abs() < 1e-9);
    let agent_latency: f64 = report.per_agent.values().map(|t| t.latency_ms).sum();
    assert!(report.usage.latency_ms > 0.0);
    assert!((report.usage.latency_ms - agent_latency).abs() < 1e-6);
    assert_eq!(fake.remaining(), 0);
}

#[test]
fn every_example_flow_parses() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples");
    let mut parsed = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            FlowSpec::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            parsed += 1;
        }
    }
    assert!(
        parsed >= 3,
        "support-desk, support-desk-llm and tools-with-approval"
    );
}

#[tokio::test]
async fn fan_out_and_hub_modes_run_the_bus_orchestrations() {
    let agents = format!(
        "[input]\ntext = \"topic\"\n{}",
        replying_agents(&[("optimist", " +"), ("pessimist", " -")])
    );
    let (result, _) = run(&format!("name = \"f\"\nmode = \"fan_out\"\n{agents}")).await;
    let texts: Vec<String> = result.unwrap().outputs.iter().map(Item::text).collect();
    assert_eq!(
        texts,
        ["topic +", "topic -"],
        "each agent answers the input"
    );
    let (result, seen) = run(&format!(
        "name = \"h\"\nmode = \"hub\"\nrounds = 2\n{agents}"
    ))
    .await;
    let texts: Vec<String> = result.unwrap().outputs.iter().map(Item::text).collect();
    assert_eq!(
        texts,
        ["topic + - + -"],
        "agents speak in turn, each hearing the last reply"
    );
    assert_eq!(seen.len(), 5, "the input and four replies");
}

/// A flow of one rule agent `a` answering the person, for a run on a store.
fn stored_flow() -> Flow {
    let text = format!(
        "name = \"stored\"\nmode = \"handoffs\"\ntask_id = \"task-stored\"\n\
         [input]\nfrom = \"person\"\nto = \"a\"\ntext = \"hello\"\n{}",
        replying_agents(&[("a", "!")])
    );
    let spec = FlowSpec::parse(&text).unwrap();
    Flow::new(spec, None, Arc::new(MemoryConfirmations::new())).unwrap()
}

/// The journal key of the outputs of the delivery of message `id`.
fn outputs_key(id: &str) -> String {
    let digest = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, id.as_bytes()).simple();
    format!("outputs-{digest}")
}

/// The texts waiting in `queue`, acked.
async fn texts_in(bus: &dyn Bus, queue: &str) -> Vec<String> {
    let mut texts = Vec::new();
    for d in bus.receive(queue, 10, Duration::ZERO).await.unwrap() {
        let item = Item::from_json(&serde_json::from_slice(&d.envelope.bytes).unwrap()).unwrap();
        texts.push(item.text());
        bus.ack(&d).await.unwrap();
    }
    texts
}

#[tokio::test]
async fn a_stored_run_records_each_deliverys_outputs_with_them_stored() {
    let bus = Arc::new(MemoryBus::new(BusConfig::default()));
    let flow = stored_flow();
    let first = flow.first_message();
    let report = flow
        .run_stored(&*bus, first.clone(), &mut |_: &Item| {})
        .await
        .unwrap();
    assert_eq!(report.outputs.len(), 1);
    assert_eq!(report.outputs[0].text(), "hello!");
    let records = bus.effects("journal/a/task-stored").await.unwrap();
    let key = outputs_key(first.id.as_deref().unwrap());
    let record = records
        .iter()
        .find(|e| e.message_id == key)
        .expect("the outputs recorded");
    let record: serde_json::Value = serde_json::from_slice(&record.record).unwrap();
    assert_eq!(record["stored"], true, "{record}");
    assert_eq!(record["items"][0]["content"], "hello!", "{record}");
    assert_eq!(texts_in(&*bus, "person").await, ["hello!"]);
    assert_eq!(bus.depth("a").await.unwrap(), 0, "the delivery was acked");
}

/// A store an earlier chorus wrote: the outputs were recorded before they were sent, and the
/// delivery was left unacked. The resumed run sends the recorded items (not the agent's) and
/// acks.
#[tokio::test]
async fn a_stored_run_sends_outputs_an_earlier_run_recorded_but_did_not_send() {
    let bus = Arc::new(MemoryBus::new(BusConfig::default()));
    let flow = stored_flow();
    let first = flow.first_message();
    let recorded = serde_json::json!({"items": [{
        "id": "reply-recorded", "role": "assistant", "name": "a", "recipient": "person",
        "content": "recorded earlier", "metadata": {"task_id": "task-stored"}
    }]});
    let journal = BusJournal::new(bus.clone());
    let book = Book::new("a", "task-stored");
    let key = outputs_key(first.id.as_deref().unwrap());
    assert!(journal.record(&book, &key, &recorded).await.unwrap());
    let report = flow
        .run_stored(&*bus, first, &mut |_: &Item| {})
        .await
        .unwrap();
    assert_eq!(report.outputs.len(), 1);
    assert_eq!(report.outputs[0].text(), "recorded earlier");
    assert_eq!(texts_in(&*bus, "person").await, ["recorded earlier"]);
    assert_eq!(
        bus.effects("journal/a/task-stored").await.unwrap().len(),
        1,
        "the agent did not run again"
    );
    assert_eq!(bus.depth("a").await.unwrap(), 0, "the delivery was acked");
}
