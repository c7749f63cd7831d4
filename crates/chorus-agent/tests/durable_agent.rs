//! An LLM agent keeping its conversation per task in a journal (a SQLite store here, the hub's
//! over HTTP for workers): a new instance with no memory resumes a task where the last one
//! stopped, a redelivered input gets the same outputs without a model call, and an approval
//! given an hour later resumes the halted call.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chorus_agent::agents::{FlowAgent, Item, LlmAgent, LlmAgentConfig};
use chorus_agent::confirm::{ConfirmationState, Confirmations, SqliteConfirmations};
use chorus_agent::journal::{Book, BusJournal, Journal};
use chorus_agent::model::{EndpointConfig, OpenAiChatClient};
use chorus_agent::tools::{FunctionTool, ToolOutput, ToolRegistry};
use chorus_bus::{BusConfig, SqliteBus};
use chorus_core::{Message, Role};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use support::fake_openai::{FakeOpenAi, Reply, chat};

#[derive(Deserialize, JsonSchema)]
struct Restart {
    /// Host.
    host: String,
}

/// What one process of the test has: the journal and confirmations reopened from their files,
/// and a tool counting its runs.
struct Process {
    journal: Arc<dyn Journal>,
    confirmations: Arc<SqliteConfirmations>,
    registry: ToolRegistry,
}

fn process(dir: &Path, runs: Arc<AtomicUsize>) -> Process {
    let bus = SqliteBus::open(dir.join("store.db"), BusConfig::default()).unwrap();
    let journal: Arc<dyn Journal> = Arc::new(BusJournal::new(Arc::new(bus)));
    let confirmations = Arc::new(SqliteConfirmations::open(&dir.join("confirmations.db")).unwrap());
    let tool = FunctionTool::new("restart_router", "Restarts a router", move |a: Restart| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            ToolOutput::success(json!({"status": "success", "restarted": a.host}))
        }
    })
    .with_confirmation();
    let mut registry = ToolRegistry::new()
        .with_confirmations(confirmations.clone())
        .with_journal(journal.clone());
    registry.register(Arc::new(tool)).unwrap();
    Process {
        journal,
        confirmations,
        registry,
    }
}

fn agent(fake: &FakeOpenAi, registry: ToolRegistry) -> LlmAgent {
    let client = OpenAiChatClient::new(
        EndpointConfig::new(fake.base_url())
            .with_retries(0, Duration::from_millis(10))
            .with_timeout(Duration::from_secs(10)),
    );
    let mut config = LlmAgentConfig::new("netops", "You restart routers.", "gpt-test");
    config.tools = vec!["restart_router".into()];
    LlmAgent::new(config, Arc::new(client), registry).unwrap()
}

fn user(id: &str, text: &str) -> Item {
    let mut m = Message::new(Role::User, text);
    m.name = Some("customer".into());
    m.id = Some(id.into());
    m.recipient = Some("netops".into());
    Item::Message(m)
}

fn texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}: {}", m["role"].as_str().unwrap(), m["content"]))
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn an_approval_given_an_hour_later_resumes_the_task_in_a_new_instance() {
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let fake = FakeOpenAi::start(vec![
        Reply::call(
            "call_r",
            "restart_router",
            r#"{"host":"10.0.0.1"}"#,
            (10, 5),
        ),
        Reply::answer("I need your approval to restart 10.0.0.1.", (20, 4)),
        Reply::answer("Router 10.0.0.1 restarted.", (30, 4)),
    ])
    .await;

    // The first process halts on the confirmation and answers; then it is gone.
    let first = process(dir.path(), runs.clone());
    let out = agent(&fake, first.registry.clone())
        .handle(&user("m-1", "Please restart my router 10.0.0.1"), "task-r")
        .await
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].text(), "I need your approval to restart 10.0.0.1.");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "halted, not run");
    let pending = first
        .confirmations
        .list(Some(ConfirmationState::Pending))
        .await
        .unwrap();
    assert_eq!(pending.len(), 1);
    let confirmation = pending[0].id.clone();
    drop(first);

    // An hour passes on the runtime's clock: nothing the agent stored depends on it.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(3600)).await;
    tokio::time::resume();

    // A person approves; a new process (nothing in memory) gets the person's next message.
    let second = process(dir.path(), runs.clone());
    second
        .confirmations
        .decide(&confirmation, true, "admin", None)
        .await
        .unwrap();
    let resumed = agent(&fake, second.registry.clone());
    let out = resumed
        .handle(&user("m-2", "Approved, go ahead."), "task-r")
        .await
        .unwrap();
    assert_eq!(out[0].text(), "Router 10.0.0.1 restarted.");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the approved call ran once");
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let seen = texts(&requests[2].body);
    // The whole conversation came back from the store: the first turn, the halted result,
    // the real result of the approved call, then the new message.
    assert!(
        seen[0].starts_with("system: \"You restart routers."),
        "{seen:?}"
    );
    assert!(seen[1].contains("Please restart my router"), "{seen:?}");
    let halted = seen
        .iter()
        .position(|s| s.contains("human_confirmation_required"));
    let real = seen
        .iter()
        .position(|s| s.contains("\\\"restarted\\\":\\\"10.0.0.1\\\""));
    let approved = seen.iter().position(|s| s.contains("Approved, go ahead."));
    assert!(
        matches!((halted, real, approved), (Some(h), Some(r), Some(a)) if h < r && r < a),
        "{seen:?}"
    );
    // The journal keeps the steps in order, with the task's usage so far.
    let book = Book::new("netops", "task-r");
    let records = second.journal.records(&book).await.unwrap();
    let steps: Vec<&Value> = records
        .iter()
        .filter(|(k, _)| k.starts_with("step-"))
        .map(|(_, v)| v)
        .collect();
    assert_eq!(steps.len(), 3, "{records:?}");
    assert_eq!(steps[2]["usage"]["calls"], 3);
    assert_eq!(steps[2]["input"], "m-2");

    // The same message delivered again: the recorded outputs, no model call, no tool run.
    let again = agent(&fake, process(dir.path(), runs.clone()).registry)
        .handle(&user("m-2", "Approved, go ahead."), "task-r")
        .await
        .unwrap();
    assert_eq!(again, out);
    assert_eq!(fake.requests().len(), 3);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_new_instance_resumes_after_the_last_recorded_step_without_repeating_it() {
    #[derive(Deserialize, JsonSchema)]
    struct Lookup {
        /// Host.
        host: String,
    }
    let dir = tempfile::tempdir().unwrap();
    let lookups = Arc::new(AtomicUsize::new(0));
    let registry = || {
        let bus = SqliteBus::open(dir.path().join("store.db"), BusConfig::default()).unwrap();
        let counter = lookups.clone();
        let tool = FunctionTool::new("lookup", "Looks a host up", move |a: Lookup| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                ToolOutput::success(json!({"status": "success", "host": a.host, "up": true}))
            }
        });
        let mut registry =
            ToolRegistry::new().with_journal(Arc::new(BusJournal::new(Arc::new(bus))));
        registry.register(Arc::new(tool)).unwrap();
        registry
    };
    let with_lookup = |fake: &FakeOpenAi, registry: ToolRegistry| {
        let client = OpenAiChatClient::new(
            EndpointConfig::new(fake.base_url())
                .with_retries(0, Duration::from_millis(10))
                .with_timeout(Duration::from_secs(10)),
        );
        let mut config = LlmAgentConfig::new("netops", "You check hosts.", "gpt-test");
        config.tools = vec!["lookup".into()];
        LlmAgent::new(config, Arc::new(client), registry).unwrap()
    };
    // The first instance makes one step (a call and its result), then the model fails.
    let fake = FakeOpenAi::start(vec![
        Reply::call("call_l", "lookup", r#"{"host":"db-1"}"#, (10, 5)),
        Reply::status(500),
    ])
    .await;
    let input = user("m-9", "Is db-1 up?");
    let failed = with_lookup(&fake, registry())
        .handle(&input, "task-l")
        .await;
    assert!(failed.is_err());
    assert_eq!(lookups.load(Ordering::SeqCst), 1);

    // A new instance with the same input goes on from the recorded step.
    let fake2 = FakeOpenAi::start(vec![Reply::answer("db-1 is up.", (30, 3))]).await;
    let out = with_lookup(&fake2, registry())
        .handle(&input, "task-l")
        .await
        .unwrap();
    assert_eq!(out[0].text(), "db-1 is up.");
    assert_eq!(
        lookups.load(Ordering::SeqCst),
        1,
        "the lookup did not run again"
    );
    let requests = fake2.requests();
    assert_eq!(
        requests.len(),
        1,
        "one model call: the step after the recorded one"
    );
    let seen = texts(&requests[0].body);
    assert_eq!(
        seen.iter().filter(|s| s.contains("Is db-1 up?")).count(),
        1,
        "the input once: {seen:?}"
    );
    assert!(
        seen.iter().any(|s| s.contains("\\\"up\\\":true")),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_step_cut_off_between_its_tool_calls_runs_the_recorded_calls_not_new_ones() {
    // A real model gives new call ids each time it is asked; if a step cut off after its first
    // call finished asked again, the tool journal (keyed by call id) could not know the first
    // call had run. The reply is recorded before its calls run and a retried step replays it.
    #[derive(Deserialize, JsonSchema)]
    struct Host {
        /// Host.
        host: String,
    }
    let dir = tempfile::tempdir().unwrap();
    let (notes, hangs) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let registry = || {
        let bus = SqliteBus::open(dir.path().join("store.db"), BusConfig::default()).unwrap();
        let counter = notes.clone();
        let note = FunctionTool::new("open_ticket", "Opens a ticket", move |a: Host| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                ToolOutput::success(json!({"status": "success", "ticket": a.host}))
            }
        });
        let counter = hangs.clone();
        let slow = FunctionTool::new("probe", "Probes a host", move |a: Host| {
            let counter = counter.clone();
            async move {
                // The first run never ends: the process is "killed" inside it.
                if counter.fetch_add(1, Ordering::SeqCst) == 0 {
                    std::future::pending::<()>().await;
                }
                ToolOutput::success(json!({"status": "success", "host": a.host, "up": true}))
            }
        });
        let mut registry =
            ToolRegistry::new().with_journal(Arc::new(BusJournal::new(Arc::new(bus))));
        registry.register(Arc::new(note)).unwrap();
        registry.register(Arc::new(slow)).unwrap();
        registry
    };
    let agent = |fake: &FakeOpenAi, registry: ToolRegistry| {
        let client = OpenAiChatClient::new(
            EndpointConfig::new(fake.base_url())
                .with_retries(0, Duration::from_millis(10))
                .with_timeout(Duration::from_secs(10)),
        );
        let mut config = LlmAgentConfig::new("netops", "You fix hosts.", "gpt-test");
        config.tools = vec!["open_ticket".into(), "probe".into()];
        LlmAgent::new(config, Arc::new(client), registry).unwrap()
    };
    let two_calls = |a: &str, b: &str| {
        Reply::chat(vec![
            chat::role(),
            chat::call_start(0, a, "open_ticket", r#"{"host":"db-1"}"#),
            chat::call_start(1, b, "probe", r#"{"host":"db-1"}"#),
            chat::finish("tool_calls"),
            chat::usage(10, 5),
        ])
    };
    let input = user("m-cut", "db-1 is down, open a ticket and probe it.");
    let fake = FakeOpenAi::start(vec![two_calls("call_first_a", "call_first_b")]).await;
    let first = agent(&fake, registry());
    let cut =
        tokio::time::timeout(Duration::from_millis(500), first.handle(&input, "task-cut")).await;
    assert!(cut.is_err(), "the first instance is cut off inside probe");
    assert_eq!(
        (notes.load(Ordering::SeqCst), hangs.load(Ordering::SeqCst)),
        (1, 1)
    );

    // The new instance is not asked for the cut step (its model would answer at once and the
    // probe would never run), only for the next one, which sees both recorded calls' results.
    let fake2 = FakeOpenAi::start(vec![Reply::answer("Ticket opened; db-1 is up.", (30, 3))]).await;
    let out = agent(&fake2, registry())
        .handle(&input, "task-cut")
        .await
        .unwrap();
    assert_eq!(
        notes.load(Ordering::SeqCst),
        1,
        "the finished call did not run again"
    );
    assert_eq!(
        hangs.load(Ordering::SeqCst),
        2,
        "the unfinished (idempotent) call ran again"
    );
    let requests = fake2.requests();
    assert_eq!(
        requests.len(),
        1,
        "one model call: the step after the cut one"
    );
    let sent = requests[0].body.to_string();
    assert!(
        sent.contains("call_first_a") && sent.contains("call_first_b"),
        "{sent}"
    );
    assert!(sent.contains(r#"\"up\":true"#), "{sent}");
    assert_eq!(out[0].text(), "Ticket opened; db-1 is up.");
}

#[tokio::test(flavor = "current_thread")]
async fn the_same_call_for_another_input_of_the_task_runs_again() {
    // A rule agent's call id comes from the task, tool and arguments (so that an approval is
    // found again on a re-run): a redelivered input must reuse the recorded result, but a new
    // input making the same call (a notification with fixed text) must run it again.
    let dir = tempfile::tempdir().unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let bus = SqliteBus::open(dir.path().join("store.db"), BusConfig::default()).unwrap();
    let counter = runs.clone();
    let notify = FunctionTool::new("notify", "Pages the on-call", move |_: Restart| {
        let counter = counter.clone();
        async move {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            ToolOutput::success(json!({"status": "success", "page": n}))
        }
    });
    let mut registry = ToolRegistry::new().with_journal(Arc::new(BusJournal::new(Arc::new(bus))));
    registry.register(Arc::new(notify)).unwrap();
    let mut call = chorus_core::ToolCall::function("call_fixed", "notify", &Value::Null);
    call.function.arguments = r#"{"host":"10.0.0.1"}"#.into();
    let page = |input: &'static str| {
        let (registry, call) = (&registry, &call);
        async move {
            let out = registry
                .invoke_for_input("ops", call, "task-r", input)
                .await;
            match out.outcome {
                chorus_core::ToolOutcome::Success(v) => v["page"].as_u64().unwrap(),
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(page("m-1").await, 1);
    assert_eq!(
        page("m-1").await,
        1,
        "a redelivery gets the recorded result"
    );
    assert_eq!(page("m-2").await, 2, "another input runs the call again");
    assert_eq!(page("m-2").await, 2);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
