//! A flow waits while a person decides a confirmation (in a SQLite file another process could
//! open), then resumes the halted LLM agent's conversation; and hub agents hear each other.

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chorus_agent::agents::Item;
use chorus_agent::confirm::{
    ConfirmationState, Confirmations, MemoryConfirmations, SqliteConfirmations,
};
use chorus_agent::flow::{ApprovalWait, Flow, FlowError, FlowReport, FlowSpec, ModelFactory};
use chorus_agent::model::{EndpointConfig, ModelClient, OpenAiChatClient};
use serde_json::Value;
use support::fake_openai::{FakeOpenAi, Reply};

fn call(args: &str) -> Reply {
    Reply::call("call_restart", "restart", args, (50, 10))
}

fn text(t: &str) -> Reply {
    Reply::answer(t, (50, 10))
}

fn factory(fake: &FakeOpenAi) -> ModelFactory {
    let base = fake.base_url();
    Arc::new(move |_spec| {
        let client: Arc<dyn ModelClient> = Arc::new(OpenAiChatClient::new(
            EndpointConfig::new(base.clone()).with_retries(0, Duration::from_millis(10)),
        ));
        Ok(client)
    })
}

/// A flow whose one LLM agent may call `restart`, which appends the host to `log`.
fn approval_flow(log: &Path) -> FlowSpec {
    FlowSpec::parse(&format!(
        r#"name = "approval"
task_id = "task-wait-1"
[input]
from = "operator"
text = "Restart router r1."
[[tools]]
name = "restart"
kind = "command"
program = "sh"
args = ["-c", "echo restarted {{host}}; echo {{host}} >> {log}"]
requires_confirmation = true
parameters = {{ type = "object", properties = {{ host = {{ type = "string" }} }}, required = ["host"] }}
[[agents]]
name = "ops"
kind = "llm"
model = "gpt-test"
tools = ["restart"]
personality = "You restart routers when asked."
"#,
        log = log.display()
    ))
    .unwrap()
}

/// Runs the flow with a SQLite store at `db`, waiting up to `timeout`; while it waits, a
/// second handle on the same file decides the first pending confirmation (when `decide` is
/// set). Returns the result, the notices and the decided confirmation's state afterwards.
async fn run_waiting(
    fake: &FakeOpenAi,
    log: &Path,
    db: &Path,
    timeout: Duration,
    decide: Option<bool>,
) -> (Result<FlowReport, FlowError>, Vec<String>, Vec<Item>) {
    let store = Arc::new(SqliteConfirmations::open(db).unwrap());
    let notices = Arc::new(Mutex::new(Vec::new()));
    let heard = notices.clone();
    let wait = ApprovalWait {
        timeout,
        poll: Duration::from_millis(50),
        notice: Arc::new(move |c| {
            heard
                .lock()
                .unwrap()
                .push(format!("{}({}) {}", c.tool, c.arguments, c.id));
        }),
    };
    let flow = Flow::new(approval_flow(log), Some(&factory(fake)), store)
        .unwrap()
        .await_approval(wait);
    let person = decide.map(|approve| {
        let other = SqliteConfirmations::open(db).unwrap();
        tokio::spawn(async move {
            loop {
                let pending = other.list(Some(ConfirmationState::Pending)).await.unwrap();
                if let Some(c) = pending.first() {
                    let note = (!approve).then(|| "not during business hours".to_owned());
                    other.decide(&c.id, approve, "tester", note).await.unwrap();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    });
    let mut seen = Vec::new();
    let result = flow.run(&mut |i: &Item| seen.push(i.clone())).await;
    if let Some(p) = person {
        p.abort();
    }
    let notices = notices.lock().unwrap().clone();
    (result, notices, seen)
}

/// The text of every message of a recorded request, as one string per message.
fn messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect()
}

#[tokio::test]
async fn an_approval_given_while_the_flow_waits_runs_the_call_once_and_resumes_the_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let (log, db) = (dir.path().join("log"), dir.path().join("c.db"));
    let fake = FakeOpenAi::start(vec![
        call(r#"{"host":"r1"}"#),
        text("I need your approval to restart r1."),
        text("Done: r1 restarted."),
    ])
    .await;
    let (result, notices, seen) =
        run_waiting(&fake, &log, &db, Duration::from_secs(10), Some(true)).await;
    let report = result.unwrap();
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "r1\n", "ran once");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].starts_with(r#"restart({"host":"r1"}) conf-"#),
        "{notices:?}"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let second = messages(&requests[1].body).join("\n");
    assert!(second.contains("halted"), "{second}");
    assert!(!second.contains("restarted r1"), "{second}");
    let third = messages(&requests[2].body);
    let result_at = third
        .iter()
        .rposition(|m| m.contains("restarted r1") && m.contains("\"tool\""))
        .unwrap_or_else(|| panic!("the real result reaches the model: {third:?}"));
    assert!(third[result_at].contains("call_restart"), "{third:?}");
    assert!(
        third
            .last()
            .unwrap()
            .contains("I approved the call restart"),
        "{third:?}"
    );
    let texts: Vec<String> = report.outputs.iter().map(Item::text).collect();
    assert_eq!(
        texts,
        ["I need your approval to restart r1.", "Done: r1 restarted."]
    );
    assert!(report.pending_confirmations.is_empty());
    let said: Vec<(Option<&str>, String)> = seen.iter().map(|i| (i.sender(), i.text())).collect();
    assert_eq!(said.len(), 4, "{said:?}");
    assert_eq!(said[1].1, "I need your approval to restart r1.");
    assert_eq!(
        said[2].0,
        Some("operator"),
        "the decision message follows: {said:?}"
    );
    assert!(
        said[2].1.starts_with("I approved the call restart("),
        "{said:?}"
    );
    let store = SqliteConfirmations::open(&db).unwrap();
    let all = store.list(None).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].state, ConfirmationState::Consumed);
}

#[tokio::test]
async fn a_rejection_gives_the_model_the_refusal_and_the_tool_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (log, db) = (dir.path().join("log"), dir.path().join("c.db"));
    let fake = FakeOpenAi::start(vec![
        call(r#"{"host":"r1"}"#),
        text("I need your approval to restart r1."),
        text("Understood, r1 was not restarted."),
    ])
    .await;
    let (result, _, _) = run_waiting(&fake, &log, &db, Duration::from_secs(10), Some(false)).await;
    let report = result.unwrap();
    assert!(!log.exists(), "the tool did not run");
    let third = messages(&fake.requests()[2].body).join("\n");
    assert!(third.contains("ConfirmationRejected"), "{third}");
    assert!(third.contains("not during business hours"), "{third}");
    assert_eq!(
        report.outputs.last().map(Item::text).as_deref(),
        Some("Understood, r1 was not restarted.")
    );
}

#[tokio::test]
async fn without_a_decision_the_wait_ends_with_the_pending_id() {
    let dir = tempfile::tempdir().unwrap();
    let (log, db) = (dir.path().join("log"), dir.path().join("c.db"));
    let fake = FakeOpenAi::start(vec![
        call(r#"{"host":"r1"}"#),
        text("I need your approval to restart r1."),
    ])
    .await;
    let started = std::time::Instant::now();
    let (result, notices, seen) = run_waiting(&fake, &log, &db, Duration::from_secs(1), None).await;
    let waited = started.elapsed();
    let Err(FlowError::Failed(message)) = result else {
        panic!("expected a failure, got {result:?}");
    };
    let id = notices[0].rsplit(' ').next().unwrap();
    assert!(
        message.contains("still pending") && message.contains(id),
        "{message}"
    );
    assert!(!log.exists());
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(8),
        "{waited:?}"
    );
    assert_eq!(fake.requests().len(), 2, "no model call after the timeout");
    assert_eq!(
        seen.last().map(Item::text).as_deref(),
        Some("I need your approval to restart r1."),
        "what the agent said before the wait was sent before it"
    );
}

#[tokio::test]
async fn hub_agents_hear_the_first_message_and_each_others_replies_once() {
    let fake = FakeOpenAi::start(vec![
        text("Alpha: check the cable."),
        text("Beta: and the router lights."),
        text("Gamma: summary done."),
    ])
    .await;
    let mut spec = String::from(
        "name = \"hub\"\nmode = \"hub\"\n[input]\nfrom = \"user\"\ntext = \"My internet drops.\"\n",
    );
    for name in ["alpha", "beta", "gamma"] {
        spec.push_str(&format!(
            "[[agents]]\nname = \"{name}\"\nkind = \"llm\"\nmodel = \"gpt-test\"\npersonality = \"You are {name}.\"\n"
        ));
    }
    let store = Arc::new(MemoryConfirmations::new());
    let flow = Flow::new(
        FlowSpec::parse(&spec).unwrap(),
        Some(&factory(&fake)),
        store,
    )
    .unwrap();
    flow.run(&mut |_: &Item| {}).await.unwrap();
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let count = |i: usize, needle: &str| {
        messages(&requests[i].body)
            .iter()
            .filter(|m| m.contains(needle))
            .count()
    };
    assert_eq!(
        count(1, "My internet drops."),
        1,
        "beta hears the user once"
    );
    assert_eq!(count(1, "Alpha: check the cable."), 1);
    let gamma = messages(&requests[2].body);
    for needle in [
        "My internet drops.",
        "Alpha: check the cable.",
        "Beta: and the router lights.",
    ] {
        assert_eq!(count(2, needle), 1, "{needle}: {gamma:?}");
    }
    let alpha_line = gamma.iter().find(|m| m.contains("Alpha:")).unwrap();
    assert!(alpha_line.contains(r#""name":"alpha""#), "{alpha_line}");
}
