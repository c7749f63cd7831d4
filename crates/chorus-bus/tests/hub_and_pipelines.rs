//! Hub broadcast and the pipelines, over test agents that record what they see.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chorus_bus::hub::Hub;
use chorus_bus::pipeline::{AgentRef, Router, fan_out, loop_until, sequential};
use chorus_bus::{Agent, AgentError};
use serde_json::{Value, json};

/// Appends its name to `trail`, remembers what it observed, sleeps `delay` before replying.
struct Recorder {
    name: String,
    delay: Duration,
    seen: Mutex<Vec<Value>>,
}

impl Recorder {
    fn new(name: &str) -> Arc<Recorder> {
        Recorder::slow(name, Duration::ZERO)
    }

    fn slow(name: &str, delay: Duration) -> Arc<Recorder> {
        Arc::new(Recorder {
            name: name.into(),
            delay,
            seen: Mutex::new(Vec::new()),
        })
    }

    fn seen(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl Agent<Value> for Recorder {
    fn name(&self) -> &str {
        &self.name
    }

    async fn reply(&self, mut msg: Value) -> Result<Value, AgentError> {
        tokio::time::sleep(self.delay).await;
        if msg["fail"] == json!(self.name) {
            return Err(AgentError::new(&self.name, "asked to fail"));
        }
        let trail = msg["trail"].as_array_mut().expect("trail");
        trail.push(json!(self.name));
        msg["from"] = json!(self.name);
        Ok(msg)
    }

    async fn observe(&self, msg: Value) {
        self.seen.lock().unwrap().push(msg);
    }
}

fn start() -> Value {
    json!({"trail": []})
}

fn as_ref(r: &Arc<Recorder>) -> AgentRef<Value> {
    r.clone()
}

#[tokio::test]
async fn hub_announces_and_broadcasts_replies_to_the_others() {
    let (a, b, c) = (Recorder::new("a"), Recorder::new("b"), Recorder::new("c"));
    let hub = Hub::enter(
        "room",
        vec![as_ref(&a), as_ref(&b), as_ref(&c)],
        Some(json!({"announce": "hello"})),
    )
    .await;
    for r in [&a, &b, &c] {
        assert_eq!(
            r.seen(),
            [json!({"announce": "hello"})],
            "{} heard the announcement",
            r.name
        );
    }
    let reply = hub.speak("a", start()).await.unwrap();
    assert_eq!(reply["from"], "a");
    assert_eq!(a.seen().len(), 1, "the speaker does not hear itself");
    assert_eq!(b.seen().last(), Some(&reply));
    assert_eq!(c.seen().last(), Some(&reply));
    hub.set_auto_broadcast(false);
    hub.speak("b", start()).await.unwrap();
    assert_eq!(
        (a.seen().len(), c.seen().len()),
        (1, 2),
        "no broadcast while off"
    );
    hub.set_auto_broadcast(true);
    hub.speak("b", start()).await.unwrap();
    assert_eq!((a.seen().len(), c.seen().len()), (2, 3));
    let err = hub.speak("zed", start()).await.unwrap_err();
    assert!(err.message.contains("not a participant of hub room"));
}

#[tokio::test]
async fn hub_participants_change_while_a_reply_is_running() {
    let slow = Recorder::slow("slow", Duration::from_millis(150));
    let (b, late) = (Recorder::new("b"), Recorder::new("late"));
    let hub = Arc::new(Hub::enter("room", vec![as_ref(&slow), as_ref(&b)], None).await);
    let speaking = tokio::spawn({
        let hub = hub.clone();
        async move { hub.speak("slow", start()).await }
    });
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(hub.add(late.clone()));
    assert!(!hub.add(late.clone()), "names are unique");
    assert!(hub.remove("b"));
    assert!(!hub.remove("b"));
    let reply = speaking.await.unwrap().unwrap();
    assert_eq!(hub.participants(), ["slow", "late"]);
    assert_eq!(late.seen(), [reply], "joined during the reply, hears it");
    assert!(b.seen().is_empty(), "left during the reply, does not");
}

#[tokio::test]
async fn sequential_feeds_each_reply_to_the_next() {
    let agents = [Recorder::new("x"), Recorder::new("y"), Recorder::new("z")].map(|r| as_ref(&r));
    let out = sequential(&agents, start()).await.unwrap();
    assert_eq!(out["trail"], json!(["x", "y", "z"]));
    let mut failing = start();
    failing["fail"] = json!("y");
    let err = sequential(&agents, failing).await.unwrap_err();
    assert_eq!(err.agent, "y");
}

#[tokio::test]
async fn fan_out_gives_each_agent_its_own_copy() {
    let agents = [
        Recorder::slow("p", Duration::from_millis(120)),
        Recorder::slow("q", Duration::from_millis(120)),
        Recorder::slow("r", Duration::from_millis(120)),
    ]
    .map(|r| as_ref(&r));
    let input = start();
    let began = std::time::Instant::now();
    let replies = fan_out(&agents, &input, true).await.unwrap();
    let concurrent = began.elapsed();
    let trails: Vec<_> = replies.iter().map(|r| r["trail"].clone()).collect();
    assert_eq!(
        trails,
        [json!(["p"]), json!(["q"]), json!(["r"])],
        "copies, not a shared message"
    );
    assert_eq!(input, start(), "the input is untouched");
    let began = std::time::Instant::now();
    let in_order = fan_out(&agents, &input, false).await.unwrap();
    let sequential_time = began.elapsed();
    assert_eq!(in_order, replies);
    assert!(
        concurrent < Duration::from_millis(300),
        "concurrent took {concurrent:?}"
    );
    assert!(
        sequential_time >= Duration::from_millis(360),
        "in order took {sequential_time:?}"
    );
}

#[tokio::test]
async fn router_picks_the_first_matching_branch() {
    let (billing, network, other) = (
        Recorder::new("billing"),
        Recorder::new("network"),
        Recorder::new("other"),
    );
    let router = Router::default()
        .when(|m: &Value| m["category"] == "BILLING", as_ref(&billing))
        .when(|m: &Value| m["category"] == "NETWORK", as_ref(&network))
        .otherwise(as_ref(&other));
    let mut msg = start();
    msg["category"] = json!("NETWORK");
    assert_eq!(router.route(msg).await.unwrap()["from"], "network");
    assert_eq!(router.route(start()).await.unwrap()["from"], "other");
    let strict = Router::default().when(|m: &Value| m["category"] == "BILLING", as_ref(&billing));
    assert!(strict.route(start()).await.is_err());
}

#[tokio::test]
async fn loop_stops_at_the_condition_or_the_step_limit() {
    let agent = as_ref(&Recorder::new("step"));
    let out = loop_until(
        &agent,
        start(),
        |m| m["trail"].as_array().unwrap().len() == 3,
        10,
    )
    .await
    .unwrap();
    assert!(out.done);
    assert_eq!(out.steps, 3);
    let capped = loop_until(&agent, start(), |_| false, 4).await.unwrap();
    assert!(!capped.done);
    assert_eq!(capped.steps, 4);
    assert_eq!(capped.msg["trail"].as_array().unwrap().len(), 4);
}
