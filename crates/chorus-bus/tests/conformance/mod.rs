//! The one conformance suite every bus backend must pass.
//!
//! A backend's test file builds a [`Fixture`] and invokes `conformance_tests!`, which makes one
//! test per guarantee. Server backends return `None` from their setup when their URL variable is
//! unset (after saying so), and every test then returns early.

#![allow(dead_code)]

mod dedupe;
mod retention;

// For `conformance_tests!`, which not every test binary including this module invokes.
#[allow(unused_imports)]
pub use dedupe::*;
#[allow(unused_imports)]
pub use retention::*;

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chorus_bus::{
    Binding, Bus, BusConfig, BusError, DeadReason, Effect, Envelope, Filter, Handled, Priority,
    RoutingRule, TrackSummary, handle_once, now_ms,
};
use chorus_core::Problem;
use futures::future::BoxFuture;
use serde_json::{Value, json};

mod peek;
// Unused by test files that only borrow the helpers (faults.rs).
#[allow(unused_imports)]
pub use peek::peek_shows_a_queue_without_claiming;

/// Opens a bus; opening twice with the same fixture reaches the same store when durable.
pub type Opener = Box<dyn Fn(BusConfig) -> BoxFuture<'static, Arc<dyn Bus>> + Send + Sync>;

/// Starts the removal of what a fixture created (a function, so that a fixture is `Sync`).
pub type Cleanup = Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send + Sync>;

/// A backend under test.
pub struct Fixture {
    /// Opens the store (a fresh, isolated one per fixture).
    pub open: Opener,
    /// True when the store survives closing and reopening.
    pub durable: bool,
    /// Removes what the fixture created on a server, after a passing test.
    pub cleanup: Option<Cleanup>,
}

/// The longest one conformance test (setup, checks and cleanup) may take before it fails.
pub const TEST_LIMIT: Duration = Duration::from_secs(60);

/// Runs one test's body as its own task, failing with the test's and backend's names when it
/// has not finished within [`TEST_LIMIT`]; a panic in the body is passed on as it is.
pub async fn bounded(test: &str, backend: &str, body: impl Future<Output = ()> + Send + 'static) {
    let mut task = tokio::spawn(body);
    match tokio::time::timeout(TEST_LIMIT, &mut task).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Ok(Err(e)) => panic!("conformance test `{test}` on {backend}: {e}"),
        Err(_) => {
            task.abort();
            panic!(
                "conformance test `{test}` on {backend} did not finish within {} s \
                 (a wait without a bound in the backend or the test)",
                TEST_LIMIT.as_secs()
            );
        }
    }
}

/// Makes one test per guarantee; `$setup` is an async fn returning `Option<Fixture>` and
/// `$backend` names the backend in failures.
#[macro_export]
macro_rules! conformance_tests {
    ($setup:path, $backend:literal) => {
        $crate::conformance_tests!(@each $setup, $backend;
            invalid_is_refused_and_dead_lettered, publish_read_stores_the_callers_envelope_and_still_validates, validator_hook_refuses, seed_examples_through_core_validation, durable_before_ack,
            ack_nack_and_in_progress, ack_all_settles_a_batch, ack_each_answers_every_delivery, redelivery_after_ack_deadline, max_deliver_dead_letters,
            the_last_attempts_nack_is_a_dead_letter_at_once,
            peek_shows_a_queue_without_claiming,
            duplicate_ids_are_delivered_once, handle_once_does_not_repeat_effects,
            routed_documents_commit_with_an_effect_and_an_ack,
            expired_messages_never_reach_handlers, priority_order_and_fairness,
            route_to_one_id, pool_has_competing_consumers, competing_receives_end_promptly,
            list_gets_one_copy_each, a_waiting_consumer_sleeps_until_a_message_arrives_from_anywhere,
            subscription_by_handoff_type, routing_rule_on_payload_field, hub_broadcast,
            tracking_by_task_and_correlation, messages_are_located_with_their_publish_time,
            conversation_log_resumes_from_cursor,
            tasks_and_conversations_are_listed_by_activity, depth_counts_unacknowledged_messages,
            dead_letters_are_listed_and_replayed);
        $crate::conformance_tests!(@each $setup, $backend;
            old_acknowledged_messages_are_pruned_and_recent_ones_kept,
            old_dead_letters_are_pruned_and_recent_ones_kept,
            old_effect_records_are_pruned_and_their_keys_freed,
            an_old_unacknowledged_message_is_kept_and_delivered,
            listings_are_read_a_page_at_a_time, the_dead_letters_of_a_message_are_found_by_its_id, a_dead_letter_id_is_never_handed_out_again,
            same_content_reserialised_is_a_duplicate, other_content_under_a_stored_id_is_a_conflict,
            dedupe_survives_a_reopen, dedupe_holds_within_the_window, dedupe_ends_with_the_window,
            a_conflicting_outgoing_message_is_refused, ack_wait_per_queue, max_deliver_per_queue);
    };
    (@each $setup:path, $backend:literal; $($check:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                conformance::bounded(stringify!($check), $backend, async {
                    if let Some(mut fixture) = $setup().await {
                        conformance::$check(&fixture).await;
                        if let Some(cleanup) = fixture.cleanup.take() {
                            cleanup().await;
                        }
                    }
                })
                .await;
            }
        )*
    };
}

/// The suite on a server backend (`$bus::connect(url, namespace, config)`, a fresh namespace per
/// fixture, `destroy` after a passing test), or a "not tested" line without its cargo feature.
#[macro_export]
macro_rules! server_conformance_tests {
    ($feature:literal, $bus:ident, $name:literal, $var:literal, $example:literal) => {
        #[cfg(feature = $feature)]
        mod on_server {
            use std::sync::Arc;

            use super::conformance::{self, Fixture, server_url};
            use chorus_bus::{Bus, $bus};

            async fn setup() -> Option<Fixture> {
                let url = server_url($name, $var, $example)?;
                let ns = format!("chorus_test_{}", uuid::Uuid::new_v4().simple());
                let (url2, ns2) = (url.clone(), ns.clone());
                Some(Fixture {
                    open: Box::new(move |config| {
                        let (url, ns) = (url.clone(), ns.clone());
                        Box::pin(async move {
                            let bus = $bus::connect(&url, &ns, config)
                                .await
                                .expect(concat!($name, " server reachable"));
                            Arc::new(bus) as Arc<dyn Bus>
                        })
                    }),
                    durable: true,
                    cleanup: Some(Box::new(move || {
                        Box::pin(async move {
                            let bus = $bus::connect(&url2, &ns2, Default::default())
                                .await
                                .expect("reconnect");
                            bus.destroy().await.expect("delete the test namespace");
                        })
                    })),
                })
            }

            $crate::conformance_tests!(setup, $name);
        }

        #[cfg(not(feature = $feature))]
        #[test]
        fn backend_not_built() {
            conformance::not_tested(
                $name,
                concat!("built without cargo feature `", $feature, "`"),
            );
        }
    };
}

/// Says, once per test binary and past the harness's output capture, that a backend was not
/// tested and why.
pub fn not_tested(backend: &str, why: &str) {
    use std::io::Write;
    static SAID: std::sync::Once = std::sync::Once::new();
    SAID.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "\n*** {backend} backend NOT TESTED: {why} ***\n"
        );
    });
}

/// The URL in environment variable `var`, or `None` after saying the backend was not tested.
pub fn server_url(backend: &str, var: &str, example: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) => Some(url),
        Err(_) => {
            not_tested(
                backend,
                &format!("{var} is unset (set it to e.g. {example})"),
            );
            None
        }
    }
}

/// Runs the bench's load (500 messages) on the store at `url` and checks nothing was lost; the
/// caller then checks that the run's namespace was deleted.
pub async fn run_bench_on(url: &str) {
    use chorus_bus::bench::{BenchOptions, Progress, run};
    let opts = BenchOptions {
        backend: chorus_bus::StoreAddress::parse(url).unwrap(),
        messages: 500,
        ..BenchOptions::default()
    };
    let report = run(&opts, Arc::new(Progress::default())).await.unwrap();
    assert_eq!(
        (report.sent, report.received, report.lost, report.duplicates),
        (500, 500, 0, 0)
    );
}

/// A unique id for this run.
pub fn uid(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// A fast-retrying configuration for tests.
pub fn quick() -> BusConfig {
    BusConfig {
        ack_wait: Duration::from_millis(400),
        max_deliver: 3,
        poll_interval: Duration::from_millis(5),
        ..BusConfig::default()
    }
}

/// A fresh message id (a UUID, as the handoff schema requires).
pub fn mid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A seed-003 handoff packet that chorus-core's validator accepts.
pub fn packet(id: &str, to: Value, priority: &str, kind: &str) -> Value {
    let data = match kind {
        "ESCALATION" => json!({
            "issue_category": "GENERAL", "severity": "HIGH",
            "customer_info": {"user_id": "u1", "name": "Ann"}, "technical_details": {}
        }),
        "NOTIFICATION" => json!({"event_type": "TEST_EVENT", "message": "something happened"}),
        "STATUS_UPDATE" => json!({"status": "IN_PROGRESS"}),
        "TASK_TRANSFER" => json!({"task_description": "carry on"}),
        other => panic!("no test data for {other}"),
    };
    json!({
        "metadata": {
            "message_id": id, "timestamp": "2026-01-01T00:00:00.000Z", "protocol_version": "1.0.0",
            "sender_id": "sender", "recipient_id": to, "task_id": "task-x", "priority": priority
        },
        "context": {"workflow_state": "STARTED", "previous_actions": []},
        "payload": {"handoff_type": kind, "data": data},
        "instructions": {}
    })
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

const SHORT: Duration = Duration::from_millis(50);
const LONG: Duration = Duration::from_secs(3);

async fn publish(bus: &Arc<dyn Bus>, v: &Value) {
    bus.publish(bytes(v)).await.expect("publish");
}

/// Receives everything on a queue (acknowledging it) until it stays empty for `SHORT`.
async fn drain(bus: &Arc<dyn Bus>, queue: &str) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let batch = bus.receive(queue, 16, SHORT).await.expect("receive");
        if batch.is_empty() {
            return ids;
        }
        for d in batch {
            bus.ack(&d).await.expect("ack");
            ids.push(d.envelope.id.clone());
        }
    }
}

async fn one(bus: &Arc<dyn Bus>, queue: &str, wait: Duration) -> Option<chorus_bus::Delivery> {
    let mut got = bus.receive(queue, 1, wait).await.expect("receive");
    assert!(got.len() <= 1);
    got.pop()
}

/// Unix milliseconds now, by the test's own clock.
fn wall_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970");
    i64::try_from(since.as_millis()).expect("milliseconds fit")
}

/// Each letter says when it became one, between `before` and now.
fn dead_between(letters: &[chorus_bus::DeadLetter], before: i64) {
    let after = wall_ms();
    for l in letters {
        let at = l
            .at_ms
            .unwrap_or_else(|| panic!("dead letter {} has no time", l.id));
        assert!(
            (before..=after).contains(&at),
            "dead letter {} at {at}, not within {before}..={after}",
            l.id
        );
    }
}

pub async fn publish_read_stores_the_callers_envelope_and_still_validates(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let doc = packet(&mid(), json!("agent"), "HIGH", "ESCALATION");
    let id = doc["metadata"]["message_id"].as_str().unwrap().to_owned();
    let read = Envelope::from_document(&doc, bytes::Bytes::new()).expect("a routable handoff");
    let raw = bytes(&doc);
    let receipt = bus
        .publish_read(raw.clone().into(), &doc, Some(read.clone()), None)
        .await
        .expect("published");
    assert_eq!(
        (receipt.id.as_str(), receipt.queues),
        (id.as_str(), vec!["agent".to_owned()])
    );
    let d = one(&bus, "agent", Duration::from_secs(5))
        .await
        .expect("delivered");
    assert_eq!(
        d.envelope.bytes, raw,
        "the bytes given, not the envelope's (empty) ones"
    );
    assert_eq!(d.envelope.task_id, read.task_id);
    bus.ack(&d).await.expect("acked");

    // The envelope of a valid document does not let an invalid one past the validator.
    let mut bad = packet(&mid(), json!("agent"), "HIGH", "ESCALATION");
    bad["metadata"].as_object_mut().unwrap().remove("task_id");
    let err = bus
        .publish_read(bytes(&bad).into(), &bad, Some(read), Some("mallory"))
        .await
        .unwrap_err();
    let BusError::Invalid { dead_letter_id, .. } = &err else {
        panic!("refused as invalid: {err}");
    };
    assert!(
        drain(&bus, "agent").await.is_empty(),
        "nothing invalid is delivered"
    );
    // Filed under who published it, whatever sender the document claims.
    let letter = bus.find_dead_letter(dead_letter_id).await.unwrap().unwrap();
    match &letter.reason {
        DeadReason::Invalid { publisher, .. } => assert_eq!(publisher.as_deref(), Some("mallory")),
        other => panic!("{other:?}"),
    }
}

pub async fn invalid_is_refused_and_dead_lettered(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let before = wall_ms();
    let mut bad = packet(&mid(), json!("agent"), "high", "ESCALATION");
    bad["metadata"].as_object_mut().unwrap().remove("task_id");
    let raw = bytes(&bad);
    let err = bus.publish(raw.clone()).await.unwrap_err();
    let BusError::Invalid {
        issues,
        dead_letter_id,
    } = err
    else {
        panic!("expected Invalid, got {err}");
    };
    let pointers: BTreeSet<_> = issues.iter().map(|i| i.pointer.as_str()).collect();
    assert!(pointers.contains("/metadata/priority"), "{issues:?}");
    assert!(
        issues.iter().any(|i| i.message.contains("task_id")),
        "{issues:?}"
    );
    let not_json = b"{\"metadata\": ".to_vec();
    let err = bus.publish(not_json.clone()).await.unwrap_err();
    assert!(err.to_string().contains("invalid JSON at line 1"), "{err}");
    let letters = bus.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 2);
    dead_between(&letters, before);
    assert_eq!(letters[0].id, dead_letter_id);
    assert_eq!(letters[0].bytes, raw, "original bytes kept");
    assert_eq!(
        letters[0].reason,
        DeadReason::Invalid {
            issues,
            publisher: None
        }
    );
    assert_eq!(letters[1].bytes, not_json);
    assert!(
        drain(&bus, "agent").await.is_empty(),
        "nothing invalid is delivered"
    );
}

pub async fn validator_hook_refuses(f: &Fixture) {
    let check = |doc: &Value| -> Vec<Problem> {
        match doc.pointer("/payload/data/technical_details/isp") {
            Some(_) => vec![],
            None => vec![Problem::expected(
                "/payload/data/technical_details/isp",
                "an ISP name",
                "nothing",
            )],
        }
    };
    let config = BusConfig {
        validator: Some(Arc::new(check)),
        ..quick()
    };
    let bus = (f.open)(config).await;
    let mut ok = packet(&mid(), json!("agent"), "LOW", "ESCALATION");
    ok["payload"]["data"]["technical_details"]["isp"] = json!("GlobalNet");
    publish(&bus, &ok).await;
    let missing = packet(&mid(), json!("agent"), "LOW", "ESCALATION");
    let err = bus.publish(bytes(&missing)).await.unwrap_err();
    assert!(
        matches!(&err, BusError::Invalid { issues, .. } if issues[0].pointer == "/payload/data/technical_details/isp"),
        "{err}"
    );
    assert_eq!(
        drain(&bus, "agent").await,
        [ok["metadata"]["message_id"].as_str().unwrap()]
    );
    assert_eq!(bus.dead_letters().await.unwrap()[0].bytes, bytes(&missing));
}

/// The seed's own examples through the default validator (chorus-core's schemas).
pub async fn seed_examples_through_core_validation(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let read = |name: &str| {
        let path = format!("{}/../../examples/seeds/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let valid = read("003-escalation.json");
    let receipt = bus
        .publish(valid.clone())
        .await
        .expect("the seed's example is accepted");
    assert_eq!(receipt.queues, ["technical_support_agent_pool"]);
    let invalid = read("invalid/003-python-invalid-escalation.json");
    let err = bus.publish(invalid.clone()).await.unwrap_err();
    let BusError::Invalid {
        issues,
        dead_letter_id,
    } = err
    else {
        panic!("{err}")
    };
    assert!(
        issues
            .iter()
            .any(|i| i.pointer.starts_with("/payload/data/customer_info")),
        "{issues:?}"
    );
    let letters = bus.dead_letters().await.unwrap();
    assert_eq!(
        (letters[0].id.as_str(), letters[0].bytes.as_slice()),
        (dead_letter_id.as_str(), invalid.as_slice())
    );
    let delivered = one(&bus, "technical_support_agent_pool", SHORT)
        .await
        .expect("the example is delivered");
    bus.ack(&delivered).await.unwrap();
    // The example as the seed printed it expires in 2023: refused on publish, with the pointer,
    // and kept byte for byte as an expired dead letter, which a replay does not revive.
    let mut stale: Value = serde_json::from_slice(&valid).unwrap();
    stale["metadata"]["expiration_time"] = json!("2023-10-27T12:00:00.000Z");
    stale["metadata"]["message_id"] = json!(mid());
    let stale = bytes(&stale);
    let err = bus.publish(stale.clone()).await.unwrap_err();
    let BusError::Invalid {
        issues,
        dead_letter_id,
    } = err
    else {
        panic!("{err}")
    };
    assert_eq!(issues[0].pointer, "/metadata/expiration_time", "{issues:?}");
    assert!(
        one(&bus, "technical_support_agent_pool", SHORT)
            .await
            .is_none()
    );
    let letters = bus.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 2);
    let letter = letters.iter().find(|l| l.id == dead_letter_id).unwrap();
    assert_eq!(letter.reason.kind(), "expired");
    assert_eq!(letter.bytes, stale, "kept byte for byte");
    let again = bus.replay(&dead_letter_id).await.unwrap_err();
    assert!(
        matches!(&again, BusError::Invalid { dead_letter_id: d, .. } if *d == dead_letter_id),
        "{again}"
    );
    assert_eq!(
        bus.dead_letter_count().await.unwrap(),
        2,
        "kept once, not twice"
    );
    // The invalid example, replayed, is refused again and stays one dead letter.
    let invalid_letter = letters.iter().find(|l| l.id != dead_letter_id).unwrap();
    let again = bus.replay(&invalid_letter.id).await.unwrap_err();
    assert!(
        matches!(&again, BusError::Invalid { dead_letter_id: d, .. } if *d == invalid_letter.id),
        "{again}"
    );
    let ids: Vec<String> = bus
        .dead_letters()
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.id)
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&invalid_letter.id), "{ids:?}");
    assert!(
        one(&bus, "technical_support_agent_pool", SHORT)
            .await
            .is_none()
    );
}

pub async fn durable_before_ack(f: &Fixture) {
    if !f.durable {
        eprintln!("durable_before_ack: this backend keeps nothing across a reopen; not applicable");
        return;
    }
    let id = mid();
    {
        let bus = (f.open)(quick()).await;
        let receipt = bus
            .publish(bytes(&packet(&id, json!("agent"), "LOW", "NOTIFICATION")))
            .await
            .unwrap();
        assert!(!receipt.duplicate);
    }
    let bus = (f.open)(quick()).await;
    let d = one(&bus, "agent", LONG)
        .await
        .expect("the acknowledged publish survived a reopen");
    assert_eq!(d.envelope.id, id);
    bus.ack(&d).await.unwrap();
    drop(bus);
    let bus = (f.open)(quick()).await;
    assert!(
        one(&bus, "agent", Duration::from_millis(600))
            .await
            .is_none(),
        "an acked message stays acked"
    );
}

pub async fn ack_nack_and_in_progress(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    publish(&bus, &packet(&id, json!("agent"), "LOW", "NOTIFICATION")).await;
    let d = one(&bus, "agent", LONG).await.unwrap();
    assert_eq!((d.envelope.id.as_str(), d.attempt), (id.as_str(), 1));
    bus.nack(&d, Duration::from_millis(300)).await.unwrap();
    assert!(
        one(&bus, "agent", Duration::from_millis(100))
            .await
            .is_none(),
        "nack delay respected"
    );
    let d = one(&bus, "agent", LONG)
        .await
        .expect("redelivered after the nack delay");
    assert_eq!(d.attempt, 2);
    // ack_wait is 400 ms: keep it alive past that with in_progress.
    tokio::time::sleep(Duration::from_millis(250)).await;
    bus.in_progress(&d).await.unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    bus.in_progress(&d).await.unwrap();
    assert!(
        one(&bus, "agent", Duration::from_millis(200))
            .await
            .is_none(),
        "in_progress extended the deadline"
    );
    bus.ack(&d).await.unwrap();
    assert!(
        one(&bus, "agent", Duration::from_millis(700))
            .await
            .is_none(),
        "acked is never redelivered"
    );
}

/// Publishes `n` notifications to `queue` and receives them all (held, not yet settled).
async fn published_and_received(
    bus: &Arc<dyn Bus>,
    queue: &str,
    n: usize,
) -> Vec<chorus_bus::Delivery> {
    for _ in 0..n {
        publish(bus, &packet(&mid(), json!(queue), "MEDIUM", "NOTIFICATION")).await;
    }
    let mut got = Vec::new();
    while got.len() < n {
        let batch = bus.receive(queue, 16, LONG).await.expect("receive");
        assert!(!batch.is_empty(), "only {} of {n} delivered", got.len());
        got.extend(batch);
    }
    got
}

pub async fn ack_all_settles_a_batch(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let got = published_and_received(&bus, "batch", 5).await;
    let (first, rest) = got.split_at(2);
    bus.ack_all(first).await.expect("ack_all");
    // A batch holding a delivery that is no longer held still settles the others.
    let mut mixed = rest.to_vec();
    mixed.push(first[0].clone());
    stale_or_accepted(&bus.ack_all(&mixed).await);
    settled_for_good(&bus, "batch").await;
}

pub async fn ack_each_answers_every_delivery(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let got = published_and_received(&bus, "each", 3).await;
    assert!(bus.ack_each(&[]).await.is_empty(), "nothing to answer");
    let first = bus.ack_each(&got[..2]).await;
    assert_eq!(first.len(), 2, "one answer a delivery");
    assert!(first.iter().all(Result::is_ok), "{first:?}");
    // The answers keep the order of the deliveries: the held one is acknowledged, the one
    // settled above is stale (backends that can tell) or accepted again.
    let mixed = bus.ack_each(&[got[2].clone(), got[0].clone()]).await;
    assert_eq!(mixed.len(), 2, "one answer a delivery");
    assert!(mixed[0].is_ok(), "{:?}", mixed[0]);
    stale_or_accepted(&mixed[1]);
    settled_for_good(&bus, "each").await;
}

/// The answer to an ack of a delivery already settled: stale (backends that can tell) or
/// accepted again.
fn stale_or_accepted(answer: &chorus_bus::BusResult<()>) {
    if let Err(e) = answer {
        assert!(
            matches!(e, chorus_bus::BusError::StaleDelivery { .. }),
            "{e}"
        );
    }
}

/// Nothing of `queue` comes back after the ack wait (400 ms in [`quick`]).
async fn settled_for_good(bus: &Arc<dyn Bus>, queue: &str) {
    assert!(
        one(bus, queue, Duration::from_millis(900)).await.is_none(),
        "every acknowledged delivery stays settled"
    );
}

pub async fn redelivery_after_ack_deadline(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    publish(&bus, &packet(&id, json!("agent"), "LOW", "NOTIFICATION")).await;
    let first = one(&bus, "agent", LONG).await.unwrap();
    assert!(
        one(&bus, "agent", Duration::from_millis(150))
            .await
            .is_none(),
        "held during ack_wait"
    );
    let again = one(&bus, "agent", LONG)
        .await
        .expect("redelivered after the ack deadline");
    assert_eq!(
        (again.envelope.id.as_str(), again.attempt),
        (id.as_str(), 2)
    );
    assert_eq!(again.envelope.bytes, first.envelope.bytes);
    bus.ack(&again).await.unwrap();
}

pub async fn max_deliver_dead_letters(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let before = wall_ms();
    let id = mid();
    publish(&bus, &packet(&id, json!("agent"), "LOW", "NOTIFICATION")).await;
    for attempt in 1..=3 {
        let d = one(&bus, "agent", LONG)
            .await
            .expect("delivered while attempts remain");
        assert_eq!(d.attempt, attempt);
        bus.nack(&d, Duration::ZERO).await.unwrap();
    }
    assert!(
        one(&bus, "agent", Duration::from_millis(300))
            .await
            .is_none(),
        "not delivered a 4th time"
    );
    let letters = bus.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].message_id.as_deref(), Some(id.as_str()));
    assert_eq!(letters[0].reason, DeadReason::MaxDeliver { attempts: 3 });
    assert_eq!(letters[0].queue.as_deref(), Some("agent"));
    dead_between(&letters, before);
}

/// A nack of the last attempt is a dead letter before it returns, with no receive after it.
pub async fn the_last_attempts_nack_is_a_dead_letter_at_once(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    publish(&bus, &packet(&id, json!("agent"), "LOW", "NOTIFICATION")).await;
    for attempt in 1..=3 {
        let d = one(&bus, "agent", LONG).await.expect("delivered");
        assert_eq!(d.attempt, attempt);
        let dead = bus.nack_or_dead_letter(&d, Duration::ZERO).await.unwrap();
        assert_eq!(dead, attempt == 3, "attempt {attempt}");
    }
    let letters = bus.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 1, "a dead letter before any further receive");
    assert_eq!(letters[0].message_id.as_deref(), Some(id.as_str()));
    assert_eq!(letters[0].reason, DeadReason::MaxDeliver { attempts: 3 });
    assert_eq!(
        bus.depth("agent").await.unwrap(),
        0,
        "no longer in the queue"
    );
}

pub async fn duplicate_ids_are_delivered_once(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    let p = bytes(&packet(&id, json!("agent"), "LOW", "NOTIFICATION"));
    assert!(!bus.publish(p.clone()).await.unwrap().duplicate);
    assert!(bus.publish(p.clone()).await.unwrap().duplicate);
    assert!(bus.publish(p).await.unwrap().duplicate);
    assert_eq!(drain(&bus, "agent").await, [id]);
}

pub async fn handle_once_does_not_repeat_effects(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    publish(&bus, &packet(&id, json!("worker"), "LOW", "TASK_TRANSFER")).await;
    let reply_id = mid();
    let mut reply = Envelope::new(reply_id.clone(), vec!["next".into()], b"{}".to_vec());
    reply.task_id = Some("task-x".into());
    // First attempt: the effect commits, then the consumer "crashes" before acknowledging.
    let d = one(&bus, "worker", LONG).await.unwrap();
    let applied = bus
        .commit_once(
            "counter",
            &id,
            b"+1",
            &[(reply.clone(), vec!["next".into()])],
        )
        .await
        .unwrap();
    assert!(applied);
    // Redelivery after the ack deadline: the handler must not run again.
    let d2 = one(&bus, "worker", LONG).await.expect("redelivered");
    assert_eq!(d2.attempt, d.attempt + 1);
    let ran = AtomicBool::new(false);
    let outcome = handle_once(&*bus, &d2, "counter", |_| async {
        ran.store(true, Ordering::SeqCst);
        Ok(Effect {
            record: b"+1".to_vec(),
            publish: vec![reply.clone()],
        })
    })
    .await
    .unwrap();
    assert_eq!(outcome, Handled::AlreadyDone);
    assert!(!ran.load(Ordering::SeqCst), "the handler ran again");
    let effects = bus.effects("counter").await.unwrap();
    assert_eq!(effects.len(), 1);
    assert_eq!(
        (effects[0].message_id.as_str(), effects[0].record.as_slice()),
        (id.as_str(), &b"+1"[..])
    );
    assert_eq!(
        drain(&bus, "next").await,
        [reply_id],
        "the outgoing message exists once"
    );
    assert!(
        one(&bus, "worker", Duration::from_millis(600))
            .await
            .is_none(),
        "acknowledged"
    );
    // A fresh message runs the handler and commits its effect.
    let id2 = mid();
    publish(&bus, &packet(&id2, json!("worker"), "LOW", "TASK_TRANSFER")).await;
    let d = one(&bus, "worker", LONG).await.unwrap();
    let outcome = handle_once(&*bus, &d, "counter", |env| {
        let record = env.id.clone().into_bytes();
        async move {
            Ok(Effect {
                record,
                publish: vec![],
            })
        }
    })
    .await
    .unwrap();
    assert_eq!(outcome, Handled::Applied);
    assert_eq!(bus.effects("counter").await.unwrap().len(), 2);
    // A failing handler commits nothing and the message comes back.
    let id3 = mid();
    publish(&bus, &packet(&id3, json!("worker"), "LOW", "TASK_TRANSFER")).await;
    let d = one(&bus, "worker", LONG).await.unwrap();
    let err = handle_once(&*bus, &d, "counter", |_| async { Err("boom".to_string()) })
        .await
        .unwrap_err();
    assert!(matches!(err, BusError::Handler(ref m) if m == "boom"));
    assert_eq!(bus.effects("counter").await.unwrap().len(), 2);
    let back = one(&bus, "worker", LONG)
        .await
        .expect("nacked after the failure");
    assert_eq!(back.envelope.id, id3);
    bus.ack(&back).await.unwrap();
}

/// `route_document` checks and routes as `publish` does without storing; the envelopes it gives
/// are stored by `commit_once_and_ack` together with the effect, under the caller's key, and the
/// delivery is settled.
pub async fn routed_documents_commit_with_an_effect_and_an_ack(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let input = mid();
    publish(
        &bus,
        &packet(&input, json!("worker"), "LOW", "TASK_TRANSFER"),
    )
    .await;
    let d = one(&bus, "worker", LONG).await.unwrap();
    let out = mid();
    let (env, queues) = bus
        .route_document(bytes(&packet(&out, json!("next"), "HIGH", "TASK_TRANSFER")))
        .await
        .expect("a valid packet is routed");
    assert_eq!(
        (env.id.as_str(), queues.as_slice()),
        (out.as_str(), &["next".to_owned()][..])
    );
    assert!(
        bus.locate(&out).await.unwrap().is_none(),
        "routed, not stored"
    );
    // What publish refuses is refused here, kept as a dead letter, and not stored.
    let mut no_recipient = packet(&mid(), json!("next"), "HIGH", "TASK_TRANSFER");
    no_recipient["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("recipient_id");
    for refused in [b"not json".to_vec(), bytes(&no_recipient)] {
        let err = bus.route_document(refused).await.unwrap_err();
        let BusError::Invalid { dead_letter_id, .. } = err else {
            panic!("refused as invalid: {err}");
        };
        assert!(
            bus.find_dead_letter(&dead_letter_id)
                .await
                .unwrap()
                .is_some()
        );
    }
    assert!(
        bus.commit_once_and_ack(&d, "outputs", "key-1", b"rec", &[(env, queues)])
            .await
            .unwrap()
    );
    let effects = bus.effects("outputs").await.unwrap();
    assert_eq!(
        effects
            .iter()
            .map(|e| (e.message_id.as_str(), e.record.as_slice()))
            .collect::<Vec<_>>(),
        [("key-1", &b"rec"[..])]
    );
    assert!(bus.already_handled("outputs", "key-1").await.unwrap());
    assert!(
        !bus.already_handled("outputs", &input).await.unwrap(),
        "keyed by the caller's key"
    );
    assert_eq!(drain(&bus, "next").await, [out], "stored once");
    assert!(
        one(&bus, "worker", Duration::from_millis(600))
            .await
            .is_none(),
        "the delivery was acked"
    );
}

pub async fn expired_messages_never_reach_handlers(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let soon = chrono::Utc::now() + chrono::Duration::milliseconds(300);
    let mut p = packet(&mid(), json!("agent"), "HIGH", "NOTIFICATION");
    p["metadata"]["expiration_time"] = json!(soon.to_rfc3339());
    let live = packet(&mid(), json!("agent"), "LOW", "NOTIFICATION");
    publish(&bus, &p).await;
    publish(&bus, &live).await;
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(
        drain(&bus, "agent").await,
        [live["metadata"]["message_id"].as_str().unwrap()]
    );
    let letters = bus.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(
        letters[0].reason,
        DeadReason::Expired {
            expired_at_ms: soon.timestamp_millis()
        }
    );
    assert_eq!(letters[0].bytes, bytes(&p));
}

pub async fn priority_order_and_fairness(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    for prio in ["LOW", "MEDIUM", "HIGH", "CRITICAL"] {
        publish(&bus, &packet(&mid(), json!("one"), prio, "NOTIFICATION")).await;
    }
    let mut order = Vec::new();
    while let Some(d) = one(&bus, "one", SHORT).await {
        order.push(d.envelope.priority);
        bus.ack(&d).await.unwrap();
    }
    assert_eq!(
        order,
        Priority::DESCENDING,
        "one of each: strictly by priority"
    );
    // Under load: 30 of each priority waiting; LOW is served within the first 15.
    for _ in 0..30 {
        for prio in ["LOW", "MEDIUM", "HIGH", "CRITICAL"] {
            publish(&bus, &packet(&mid(), json!("load"), prio, "NOTIFICATION")).await;
        }
    }
    let mut order = Vec::new();
    for _ in 0..30 {
        let d = one(&bus, "load", LONG).await.unwrap();
        order.push(d.envelope.priority);
        bus.ack(&d).await.unwrap();
    }
    let letters: String = order.iter().map(|p| &p.as_str()[..1]).collect();
    eprintln!("delivered order under load (C/H/M/L): {letters}");
    let count = |p| order.iter().filter(|&&x| x == p).count();
    assert_eq!(
        [
            count(Priority::Critical),
            count(Priority::High),
            count(Priority::Medium),
            count(Priority::Low)
        ],
        [16, 8, 4, 2]
    );
    assert_eq!(order[0], Priority::Critical);
    assert!(
        order[..15].contains(&Priority::Low),
        "LOW starved: {letters}"
    );
    drain(&bus, "load").await;
}

pub async fn route_to_one_id(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    let receipt = bus
        .publish(bytes(&packet(&id, json!("alice"), "LOW", "NOTIFICATION")))
        .await
        .unwrap();
    assert_eq!(receipt.queues, ["alice"]);
    assert!(drain(&bus, "bob").await.is_empty());
    assert_eq!(drain(&bus, "alice").await, [id]);
}

pub async fn pool_has_competing_consumers(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let mut sent = HashSet::new();
    for _ in 0..40 {
        let id = mid();
        publish(&bus, &packet(&id, json!("pool"), "MEDIUM", "TASK_TRANSFER")).await;
        sent.insert(id);
    }
    let consumer = |bus: Arc<dyn Bus>| async move {
        let mut got = Vec::new();
        while let Some(d) = bus
            .receive("pool", 1, Duration::from_millis(200))
            .await
            .unwrap()
            .pop()
        {
            got.push(d.envelope.id.clone());
            bus.ack(&d).await.unwrap();
        }
        got
    };
    let (a, b) = tokio::join!(
        tokio::spawn(consumer(bus.clone())),
        tokio::spawn(consumer(bus.clone()))
    );
    let all: Vec<String> = a.unwrap().into_iter().chain(b.unwrap()).collect();
    let unique: HashSet<String> = all.iter().cloned().collect();
    assert_eq!(unique, sent, "every message reached the pool");
    assert_eq!(all.len(), sent.len(), "no message reached two members");
}

/// Eight members receive one message at a time until the pool is empty: every receive ends
/// within a bound (on NATS servers before 2.11.11 a no-wait fetch losing such a race was never
/// answered), and every message reaches exactly one member.
/// An idle wait asks the store nothing until its timeout (no polling: 1,000 idle inbox streams
/// cost nothing), and a message stored by another bus on the same store (another process)
/// ends it at once; so does a nack by another bus, and a lease running out.
pub async fn a_waiting_consumer_sleeps_until_a_message_arrives_from_anywhere(f: &Fixture) {
    if !f.durable {
        // The in-memory store has no other process to hear from.
        return;
    }
    let config = BusConfig {
        ack_wait: Duration::from_secs(3),
        ..BusConfig::default()
    };
    let (a, b) = ((f.open)(config.clone()).await, (f.open)(config).await);
    let queue = "sleepy";
    assert!(
        a.receive(queue, 1, Duration::ZERO)
            .await
            .unwrap()
            .is_empty()
    );
    let started = std::time::Instant::now();
    a.wait_for(queue, Duration::from_millis(1200)).await;
    let idle = started.elapsed();
    assert!(
        idle >= Duration::from_millis(1100),
        "an idle wait of 1.2 s ended after {idle:?}: the store is polled"
    );
    // Woken by the other bus's publish, well before the timeout.
    let waiter = asleep(&a, queue).await;
    let id = mid();
    publish(&b, &packet(&id, json!(queue), "MEDIUM", "TASK_TRANSFER")).await;
    let woken = waiter.await.unwrap();
    assert!(
        woken < Duration::from_secs(5),
        "a publish elsewhere woke the waiter after {woken:?}"
    );
    let d = one(&a, queue, LONG).await.expect("the message");
    assert_eq!(d.envelope.id, id);
    // A nack by the other bus wakes a waiter of this one.
    let held = one(&b, queue, Duration::ZERO).await;
    assert!(held.is_none(), "a holds the only message");
    let waiter = asleep(&b, queue).await;
    a.nack(&d, Duration::ZERO).await.expect("nack");
    let woken = waiter.await.unwrap();
    assert!(
        woken < Duration::from_secs(5),
        "a nack woke the waiter after {woken:?}"
    );
    let again = one(&b, queue, LONG).await.expect("the message again");
    assert_eq!(again.envelope.id, id);
    // Its lease (3 s) runs out unsettled: a waiter is woken for it.
    let waiter = asleep(&a, queue).await;
    let woken = waiter.await.unwrap();
    assert!(
        woken < Duration::from_secs(10),
        "a lease running out woke the waiter after {woken:?}"
    );
    let third = one(&a, queue, LONG)
        .await
        .expect("the message after its lease ran out");
    assert_eq!(third.envelope.id, id);
    a.ack(&third).await.expect("ack");
}

/// A task waiting on `queue` for at most 20 s (returning how long it waited), once it is
/// seen asleep for 300 ms: wakes left from before (a permit for the next waiter; on SQLite,
/// the once-a-second wake of every waiter after another connection's commit) are let pass.
async fn asleep(bus: &Arc<dyn Bus>, queue: &'static str) -> tokio::task::JoinHandle<Duration> {
    for _ in 0..10 {
        let waiter = {
            let bus = bus.clone();
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                bus.wait_for(queue, Duration::from_secs(20)).await;
                started.elapsed()
            })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        if !waiter.is_finished() {
            return waiter;
        }
    }
    panic!("a waiter on an idle queue never slept for 300 ms");
}

pub async fn competing_receives_end_promptly(f: &Fixture) {
    let config = BusConfig {
        ack_wait: Duration::from_secs(10),
        ..quick()
    };
    let bus = (f.open)(config).await;
    let mut sent = HashSet::new();
    for _ in 0..120 {
        let id = mid();
        publish(
            &bus,
            &packet(&id, json!("crowd"), "MEDIUM", "TASK_TRANSFER"),
        )
        .await;
        sent.insert(id);
    }
    let member = |bus: Arc<dyn Bus>| async move {
        let mut got = Vec::new();
        loop {
            let receive = bus.receive("crowd", 1, Duration::from_millis(100));
            let mut batch = tokio::time::timeout(Duration::from_secs(5), receive)
                .await
                .expect("a receive waiting 100 ms returns within 5 s")
                .expect("receive");
            let Some(d) = batch.pop() else {
                return got;
            };
            bus.ack(&d).await.expect("ack");
            got.push(d.envelope.id.clone());
        }
    };
    let members: Vec<_> = (0..8).map(|_| tokio::spawn(member(bus.clone()))).collect();
    let mut all = Vec::new();
    for m in members {
        all.extend(m.await.expect("member"));
    }
    let unique: HashSet<String> = all.iter().cloned().collect();
    assert_eq!(unique, sent, "every message reached a member");
    assert_eq!(all.len(), sent.len(), "no message reached two members");
}

pub async fn list_gets_one_copy_each(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    let receipt = bus
        .publish(bytes(&packet(
            &id,
            json!(["a", "b", "c", "b"]),
            "LOW",
            "NOTIFICATION",
        )))
        .await
        .unwrap();
    assert_eq!(receipt.queues, ["a", "b", "c"]);
    for q in ["a", "b", "c"] {
        assert_eq!(drain(&bus, q).await, vec![id.clone()], "queue {q}");
    }
}

pub async fn subscription_by_handoff_type(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    bus.bind(Binding::new(
        "auditor",
        Filter::HandoffType("ESCALATION".into()),
    ))
    .await
    .unwrap();
    let esc = mid();
    let note = mid();
    publish(&bus, &packet(&esc, json!("alice"), "LOW", "ESCALATION")).await;
    publish(&bus, &packet(&note, json!("alice"), "LOW", "NOTIFICATION")).await;
    assert_eq!(drain(&bus, "auditor").await, vec![esc.clone()]);
    let mut alice = drain(&bus, "alice").await;
    alice.sort();
    let mut both = vec![esc, note];
    both.sort();
    assert_eq!(alice, both);
}

pub async fn routing_rule_on_payload_field(f: &Fixture) {
    let config = BusConfig {
        rules: vec![
            RoutingRule::new(
                "/payload/data/issue_category",
                json!("NETWORK_CONNECTIVITY"),
                "network_pool",
            ),
            RoutingRule::new(
                "/payload/data/issue_category",
                json!("BILLING"),
                "billing_pool",
            ),
        ],
        ..quick()
    };
    let bus = (f.open)(config).await;
    let mut net = packet(&mid(), json!("support_pool"), "HIGH", "ESCALATION");
    net["payload"]["data"]["issue_category"] = json!("NETWORK_CONNECTIVITY");
    let other = packet(&mid(), json!("support_pool"), "HIGH", "ESCALATION");
    let receipt = bus.publish(bytes(&net)).await.unwrap();
    assert_eq!(receipt.queues, ["network_pool"]);
    publish(&bus, &other).await;
    assert_eq!(
        drain(&bus, "network_pool").await,
        [net["metadata"]["message_id"].as_str().unwrap()]
    );
    assert_eq!(
        drain(&bus, "support_pool").await,
        [other["metadata"]["message_id"].as_str().unwrap()]
    );
    assert!(drain(&bus, "billing_pool").await.is_empty());
}

pub async fn hub_broadcast(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    for member in ["alice", "bob", "carol"] {
        bus.bind(Binding::new(member, Filter::Recipient("room".into())))
            .await
            .unwrap();
    }
    let id = mid();
    let receipt = bus
        .publish(bytes(&packet(&id, json!("room"), "LOW", "NOTIFICATION")))
        .await
        .unwrap();
    assert_eq!(receipt.queues, ["alice", "bob", "carol"]);
    for member in ["alice", "bob", "carol"] {
        assert_eq!(
            drain(&bus, member).await,
            vec![id.clone()],
            "member {member}"
        );
    }
    assert!(
        drain(&bus, "room").await.is_empty(),
        "the hub name is a topic, not a queue"
    );
}

pub async fn tracking_by_task_and_correlation(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let (task, corr) = (uid("task"), uid("corr"));
    let mut mine = Vec::new();
    for i in 0..6 {
        let mut p = packet(&mid(), json!("agent"), "LOW", "STATUS_UPDATE");
        if i % 2 == 0 {
            p["metadata"]["task_id"] = json!(task);
            p["metadata"]["correlation_id"] = json!(corr);
            mine.push(p["metadata"]["message_id"].as_str().unwrap().to_owned());
        }
        publish(&bus, &p).await;
    }
    let ids = |v: Vec<Envelope>| v.into_iter().map(|e| e.id).collect::<Vec<_>>();
    assert_eq!(ids(bus.by_task(&task).await.unwrap()), mine);
    assert_eq!(ids(bus.by_correlation(&corr).await.unwrap()), mine);
    assert!(bus.by_task(&uid("none")).await.unwrap().is_empty());
}

/// A task's messages come back with the store's publish time (not the document's own), and
/// `locate` finds a message by id, queued or acknowledged, with that same time.
pub async fn messages_are_located_with_their_publish_time(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let task = uid("task");
    let mut sent = Vec::new();
    for i in 0..3 {
        let mut p = packet(&mid(), json!("locator"), "MEDIUM", "STATUS_UPDATE");
        p["metadata"]["task_id"] = json!(task);
        // A document time far from the publish: the store must not report it.
        p["metadata"]["timestamp"] = json!("2001-02-03T04:05:06Z");
        let before = wall_ms();
        publish(&bus, &p).await;
        let after = wall_ms();
        sent.push((
            p["metadata"]["message_id"].as_str().unwrap().to_owned(),
            before,
            after,
        ));
        if i == 0 {
            // The first one is acknowledged before it is looked for; the others stay queued.
            assert_eq!(drain(&bus, "locator").await.len(), 1);
        }
    }
    let page = bus.task_messages(&task, None, 10).await.unwrap();
    assert_eq!(page.items.len(), 3);
    // Stores on another machine's clock may differ by a little: a second either way.
    const SKEW: i64 = 1000;
    for (logged, (id, before, after)) in page.items.iter().zip(&sent) {
        assert_eq!(&logged.envelope.id, id);
        assert!(
            (before - SKEW..=after + SKEW).contains(&logged.published_ms),
            "{id} published at {}, between {before} and {after}",
            logged.published_ms
        );
        let found = bus
            .locate(id)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{id} is located"));
        assert_eq!(&found.envelope.id, id);
        assert_eq!(found.envelope.task_id.as_deref(), Some(task.as_str()));
        assert_eq!(
            found.envelope.bytes, logged.envelope.bytes,
            "the stored document"
        );
        assert_eq!(
            found.published_ms, logged.published_ms,
            "the same publish time"
        );
    }
    let published: Vec<i64> = page.items.iter().map(|l| l.published_ms).collect();
    assert!(published.windows(2).all(|w| w[0] <= w[1]), "{published:?}");
    assert!(bus.locate(&mid()).await.unwrap().is_none(), "an unknown id");
}

pub async fn conversation_log_resumes_from_cursor(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let conv = uid("conv");
    let mut sent = Vec::new();
    for _ in 0..5 {
        let mut p = packet(&mid(), json!("agent"), "LOW", "STATUS_UPDATE");
        p["metadata"]["correlation_id"] = json!(conv);
        sent.push(p["metadata"]["message_id"].as_str().unwrap().to_owned());
        publish(&bus, &p).await;
        publish(
            &bus,
            &packet(&mid(), json!("agent"), "LOW", "STATUS_UPDATE"),
        )
        .await;
    }
    let first = bus.conversation(&conv, 0, 2).await.unwrap();
    assert_eq!(first.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
    let cursor = first.last().unwrap().seq;
    let rest = bus.conversation(&conv, cursor, 100).await.unwrap();
    assert_eq!(rest.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5]);
    let read: Vec<_> = first
        .iter()
        .chain(&rest)
        .map(|e| e.envelope.id.clone())
        .collect();
    assert_eq!(read, sent);
    assert!(bus.conversation(&conv, 5, 10).await.unwrap().is_empty());
}

pub async fn tasks_and_conversations_are_listed_by_activity(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let (task_a, task_b) = (uid("task-a"), uid("task-b"));
    let (conv_x, conv_y) = (uid("conv-x"), uid("conv-y"));
    // (task, correlation id: the conversation, which is the task when absent)
    let sends = [
        (&task_a, Some(&conv_x)),
        (&task_a, None),
        (&task_b, Some(&conv_x)),
        (&task_b, Some(&conv_x)),
        (&task_b, Some(&conv_x)),
        (&task_a, Some(&conv_y)),
    ];
    let started = now_ms();
    let mut times = Vec::new();
    for (task, corr) in sends {
        let mut p = packet(&mid(), json!("agent"), "LOW", "STATUS_UPDATE");
        p["metadata"]["task_id"] = json!(task);
        if let Some(c) = corr {
            p["metadata"]["correlation_id"] = json!(c);
        }
        publish(&bus, &p).await;
        times.push(now_ms());
        // Distinct publish times, so that "most recent" has one answer.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let counts = |list: &[TrackSummary]| {
        list.iter()
            .map(|t| (t.id.clone(), t.messages))
            .collect::<Vec<_>>()
    };
    let tasks = bus.tasks(10).await.unwrap();
    assert_eq!(counts(&tasks), [(task_a.clone(), 3), (task_b.clone(), 3)]);
    let (a, b) = (&tasks[0], &tasks[1]);
    assert!(
        a.first_ms < b.first_ms && b.first_ms < b.last_ms && b.last_ms < a.last_ms,
        "task a spans task b: {tasks:?}"
    );
    // Publish times are taken while publishing (a server's clock may be a little apart).
    let slack = 1000;
    assert!(
        a.first_ms >= started - slack && a.last_ms <= times[5] + slack,
        "{a:?}"
    );
    assert_eq!(counts(&bus.tasks(1).await.unwrap()), [(task_a.clone(), 3)]);
    assert!(bus.tasks(0).await.unwrap().is_empty());
    let conversations = bus.conversations(10).await.unwrap();
    assert_eq!(
        counts(&conversations),
        [
            (conv_y.clone(), 1),
            (conv_x.clone(), 4),
            (task_a.clone(), 1)
        ]
    );
    let x = &conversations[1];
    assert!(x.first_ms < x.last_ms, "{x:?}");
    assert_eq!(conversations[0].first_ms, conversations[0].last_ms);
    assert_eq!(
        counts(&bus.conversations(2).await.unwrap()),
        counts(&conversations[..2])
    );
}

pub async fn depth_counts_unacknowledged_messages(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let (queue, other) = (uid("inbox"), uid("other"));
    assert_eq!(bus.depth(&queue).await.unwrap(), 0, "a queue never used");
    for _ in 0..4 {
        publish(&bus, &packet(&mid(), json!(queue), "LOW", "NOTIFICATION")).await;
    }
    publish(&bus, &packet(&mid(), json!(other), "HIGH", "NOTIFICATION")).await;
    assert_eq!(bus.depth(&queue).await.unwrap(), 4);
    assert_eq!(bus.depth(&other).await.unwrap(), 1);
    let mut got = Vec::new();
    for _ in 0..20 {
        got.extend(bus.receive(&queue, 3 - got.len(), LONG).await.unwrap());
        if got.len() == 3 {
            break;
        }
    }
    assert_eq!(got.len(), 3);
    assert_eq!(
        bus.depth(&queue).await.unwrap(),
        4,
        "being handled still counts"
    );
    bus.ack(&got[0]).await.unwrap();
    assert_eq!(bus.depth(&queue).await.unwrap(), 3);
    bus.nack(&got[1], Duration::from_millis(200)).await.unwrap();
    assert_eq!(
        bus.depth(&queue).await.unwrap(),
        3,
        "a delayed message still counts"
    );
    bus.dead_letter(&got[2], DeadReason::NoRoute).await.unwrap();
    assert_eq!(
        bus.depth(&queue).await.unwrap(),
        2,
        "a dead letter leaves the queue"
    );
    let mut rest = Vec::new();
    while rest.len() < 2 {
        let batch = bus.receive(&queue, 2, LONG).await.unwrap();
        assert!(!batch.is_empty(), "the unacknowledged two come back");
        rest.extend(batch);
    }
    assert_eq!(rest.len(), 2);
    for d in &rest {
        bus.ack(d).await.unwrap();
    }
    assert_eq!(bus.depth(&queue).await.unwrap(), 0);
    assert_eq!(
        bus.depth(&other).await.unwrap(),
        1,
        "other queues are untouched"
    );
}

pub async fn dead_letters_are_listed_and_replayed(f: &Fixture) {
    let bus = (f.open)(BusConfig {
        max_deliver: 1,
        ..quick()
    })
    .await;
    let id = mid();
    let original = bytes(&packet(&id, json!("agent"), "LOW", "NOTIFICATION"));
    bus.publish(original.clone()).await.unwrap();
    let d = one(&bus, "agent", LONG).await.unwrap();
    bus.nack(&d, Duration::ZERO).await.unwrap();
    assert!(
        one(&bus, "agent", Duration::from_millis(200))
            .await
            .is_none()
    );
    let refused = bus.publish(b"{not json".to_vec()).await.unwrap_err();
    assert!(matches!(refused, BusError::Invalid { .. }), "{refused}");
    let letters = bus.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 2);
    assert_eq!(bus.dead_letter_count().await.unwrap(), 2);
    let receipt = bus.replay(&letters[0].id).await.unwrap();
    assert_eq!(receipt.queues, ["agent"]);
    bus.remove_dead_letter(&letters[1].id).await.unwrap();
    assert!(
        bus.dead_letters().await.unwrap().is_empty(),
        "replayed and removed letters leave the list"
    );
    assert_eq!(bus.dead_letter_count().await.unwrap(), 0);
    let back = one(&bus, "agent", LONG)
        .await
        .expect("replayed message delivered");
    assert_eq!((back.envelope.id.as_str(), back.attempt), (id.as_str(), 1));
    assert_eq!(back.envelope.bytes, original);
    bus.ack(&back).await.unwrap();
    let err = bus.replay("no-such-letter").await.unwrap_err();
    assert!(matches!(err, BusError::UnknownDeadLetter(_)), "{err}");
}
