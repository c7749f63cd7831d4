//! Conformance: an id published again is a duplicate (same content) or a conflict (other
//! content) for the dedupe window, across reopens; per-queue ack wait and delivery limit.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use chorus_bus::{Bus, BusConfig, BusError, ContentDigest, DeadReason, Envelope, QueueSettings};
use serde_json::{Value, json};

use super::{Fixture, LONG, bytes, drain, mid, one, packet, quick};

/// An escalation whose free-form technical details hold numbers and nested keys.
fn detailed(id: &str) -> Value {
    let mut p = packet(id, json!("agent"), "HIGH", "ESCALATION");
    p["payload"]["data"]["technical_details"] =
        json!({"retries": 3, "ratio": 0.5, "last": {"code": 504, "where": "gateway"}});
    p
}

/// The same value with every object's keys in reverse order.
fn reversed(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        other => other.clone(),
    }
}

/// `p` serialised again as another client would: keys reversed, indented, `3` written `3.0`,
/// `504` written `5.04e2` and `"gateway"` with an escaped letter.
fn reserialised(p: &Value) -> Vec<u8> {
    let text = serde_json::to_string_pretty(&reversed(p)).unwrap();
    let text = text
        .replace("\"retries\": 3", "\"retries\": 3.0")
        .replace("\"code\": 504", "\"code\": 5.04e2")
        .replace("\"gateway\"", "\"g\\u0061teway\"");
    assert_ne!(text.as_bytes(), bytes(p), "the bytes differ");
    text.into_bytes()
}

/// What the queue and the log hold after a refused publish: both unchanged.
async fn held(bus: &Arc<dyn Bus>, queue: &str) -> (u64, Vec<Vec<u8>>, u64) {
    let log = bus.by_task("task-x").await.unwrap();
    (
        bus.depth(queue).await.unwrap(),
        log.into_iter().map(|e| e.bytes.to_vec()).collect(),
        bus.dead_letter_count().await.unwrap(),
    )
}

/// Unwraps a conflict, checking its id and digests.
fn conflict(err: BusError, id: &str, stored: &[u8], found: &[u8]) {
    let BusError::Conflict {
        id: got,
        stored: s,
        found: f,
    } = &err
    else {
        panic!("expected a conflict, got {err}");
    };
    assert_eq!(got, id);
    assert_eq!(*s, ContentDigest::of(stored), "the stored content's digest");
    assert_eq!(*f, ContentDigest::of(found), "the refused content's digest");
    assert!(err.to_string().contains("hint:"), "{err}");
}

pub async fn same_content_reserialised_is_a_duplicate(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    let p = detailed(&id);
    assert!(!bus.publish(bytes(&p)).await.unwrap().duplicate);
    let again = bus.publish(reserialised(&p)).await.unwrap();
    assert!(again.duplicate, "re-serialised, it is the same message");
    assert_eq!(again.queues, ["agent"]);
    assert_eq!(drain(&bus, "agent").await, [id]);
    assert_eq!(bus.by_task("task-x").await.unwrap().len(), 1);
    // A chorus message sent again in a new trace (a retry's new span) is no new content.
    let id = mid();
    let traced = |span: &str| {
        json!({"role": "user", "id": id, "name": "alice", "recipient": "agent", "content": "hi",
               "metadata": {"traceparent": format!("00-0af7651916cd43dd8448eb211c80319c-{span}-01")}})
    };
    assert!(
        !bus.publish(bytes(&traced("b7ad6b7169203331")))
            .await
            .unwrap()
            .duplicate
    );
    let again = bus
        .publish(bytes(&traced("00f067aa0ba902b7")))
        .await
        .unwrap();
    assert!(again.duplicate);
    assert_eq!(drain(&bus, "agent").await, [id]);
}

pub async fn other_content_under_a_stored_id_is_a_conflict(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let id = mid();
    let p = detailed(&id);
    bus.publish(bytes(&p)).await.unwrap();
    let before = held(&bus, "agent").await;
    let mut other = p.clone();
    other["payload"]["data"]["technical_details"]["retries"] = json!(4);
    let err = bus.publish(bytes(&other)).await.unwrap_err();
    conflict(err, &id, &bytes(&p), &bytes(&other));
    assert_eq!(
        held(&bus, "agent").await,
        before,
        "nothing stored: depth, log and dead letters unchanged"
    );
    // Still a conflict once the first one was handled, and the original still a duplicate.
    assert_eq!(drain(&bus, "agent").await, std::slice::from_ref(&id));
    let err = bus.publish(bytes(&other)).await.unwrap_err();
    conflict(err, &id, &bytes(&p), &bytes(&other));
    assert!(bus.publish(bytes(&p)).await.unwrap().duplicate);
    assert!(drain(&bus, "agent").await.is_empty());
}

pub async fn dedupe_survives_a_reopen(f: &Fixture) {
    if !f.durable {
        eprintln!("dedupe_survives_a_reopen: this backend keeps nothing across a reopen");
        return;
    }
    let id = mid();
    let p = detailed(&id);
    {
        let bus = (f.open)(quick()).await;
        assert!(!bus.publish(bytes(&p)).await.unwrap().duplicate);
    }
    let bus = (f.open)(quick()).await;
    assert!(bus.publish(reserialised(&p)).await.unwrap().duplicate);
    let mut other = p.clone();
    other["payload"]["data"]["technical_details"]["ratio"] = json!(0.25);
    let err = bus.publish(bytes(&other)).await.unwrap_err();
    conflict(err, &id, &bytes(&p), &bytes(&other));
    assert_eq!(drain(&bus, "agent").await, [id]);
}

/// A 10 s window still holds an id 2 s later, with its content.
pub async fn dedupe_holds_within_the_window(f: &Fixture) {
    let config = BusConfig {
        dedupe_window: Duration::from_secs(10),
        ..quick()
    };
    let bus = (f.open)(config).await;
    let id = mid();
    let p = detailed(&id);
    bus.publish(bytes(&p)).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(bus.publish(bytes(&p)).await.unwrap().duplicate);
    let mut other = p.clone();
    other["payload"]["data"]["technical_details"]["retries"] = json!(0);
    let err = bus.publish(bytes(&other)).await.unwrap_err();
    conflict(err, &id, &bytes(&p), &bytes(&other));
    assert_eq!(drain(&bus, "agent").await, [id]);
}

/// A 1 s window forgets an id after it: the same id is stored again, with any content.
pub async fn dedupe_ends_with_the_window(f: &Fixture) {
    let config = BusConfig {
        dedupe_window: Duration::from_secs(1),
        ..quick()
    };
    let bus = (f.open)(config).await;
    let (a, b) = (mid(), mid());
    let pa = detailed(&a);
    let pb = detailed(&b);
    bus.publish(bytes(&pa)).await.unwrap();
    bus.publish(bytes(&pb)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(!bus.publish(bytes(&pa)).await.unwrap().duplicate);
    let mut other = pb.clone();
    other["payload"]["data"]["technical_details"]["retries"] = json!(9);
    assert!(!bus.publish(bytes(&other)).await.unwrap().duplicate);
    // The new store starts a new window.
    assert!(bus.publish(bytes(&other)).await.unwrap().duplicate);
    let got = drain(&bus, "agent").await;
    assert_eq!(got.len(), 4, "{got:?}");
}

/// A conflicting outgoing message of a handler fails its commit and is not stored.
pub async fn a_conflicting_outgoing_message_is_refused(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let taken = mid();
    let p = packet(&taken, json!("next"), "LOW", "NOTIFICATION");
    bus.publish(bytes(&p)).await.unwrap();
    let reply = Envelope::new(
        taken.clone(),
        vec!["next".into()],
        b"{\"other\":1}".to_vec(),
    );
    let err = bus
        .commit_once("h", &mid(), b"r", &[(reply, vec!["next".into()])])
        .await
        .unwrap_err();
    conflict(err, &taken, &bytes(&p), b"{\"other\":1}");
    assert_eq!(drain(&bus, "next").await, [taken], "only the first content");
}

fn overrides(pairs: &[(&str, QueueSettings)]) -> HashMap<String, QueueSettings> {
    pairs.iter().map(|(q, s)| ((*q).to_owned(), *s)).collect()
}

pub async fn ack_wait_per_queue(f: &Fixture) {
    let fast = QueueSettings {
        ack_wait: Some(Duration::from_millis(300)),
        max_deliver: None,
    };
    let config = BusConfig {
        ack_wait: Duration::from_secs(20),
        queue_settings: overrides(&[("fast", fast)]),
        ..quick()
    };
    assert_eq!(config.ack_wait_for("fast"), Duration::from_millis(300));
    assert_eq!(config.ack_wait_for("slow"), Duration::from_secs(20));
    let bus = (f.open)(config).await;
    let id = mid();
    bus.publish(bytes(&packet(
        &id,
        json!(["fast", "slow"]),
        "LOW",
        "NOTIFICATION",
    )))
    .await
    .unwrap();
    let first_fast = one(&bus, "fast", LONG).await.expect("fast delivered");
    let first_slow = one(&bus, "slow", LONG).await.expect("slow delivered");
    let again = one(&bus, "fast", LONG)
        .await
        .expect("fast redelivered after its 300 ms");
    assert_eq!(
        (again.envelope.id.as_str(), again.attempt),
        (id.as_str(), 2)
    );
    assert!(
        one(&bus, "slow", Duration::from_millis(700))
            .await
            .is_none(),
        "slow is held for its 20 s"
    );
    bus.ack(&again).await.unwrap();
    bus.ack(&first_slow).await.unwrap();
    drop((first_fast, bus));
    // Reopened with a short wait for `slow` too: a store that had the long one applies it.
    let config = BusConfig {
        ack_wait: Duration::from_secs(20),
        queue_settings: overrides(&[("fast", fast), ("slow", fast)]),
        ..quick()
    };
    let bus = (f.open)(config).await;
    let id = mid();
    bus.publish(bytes(&packet(&id, json!("slow"), "LOW", "NOTIFICATION")))
        .await
        .unwrap();
    let first = one(&bus, "slow", LONG).await.expect("delivered");
    let again = one(&bus, "slow", LONG)
        .await
        .expect("redelivered after the new 300 ms");
    assert_eq!(
        (again.envelope.id.as_str(), again.attempt),
        (id.as_str(), first.attempt + 1)
    );
    bus.ack(&again).await.unwrap();
}

pub async fn max_deliver_per_queue(f: &Fixture) {
    let config = BusConfig {
        max_deliver: 3,
        queue_settings: overrides(&[(
            "fragile",
            QueueSettings {
                ack_wait: None,
                max_deliver: Some(1),
            },
        )]),
        ..quick()
    };
    let bus = (f.open)(config).await;
    let id = mid();
    bus.publish(bytes(&packet(
        &id,
        json!(["fragile", "sturdy"]),
        "LOW",
        "NOTIFICATION",
    )))
    .await
    .unwrap();
    let mut attempts = HashMap::new();
    for queue in ["fragile", "sturdy"] {
        while let Some(d) = one(&bus, queue, Duration::from_millis(300)).await {
            *attempts.entry(queue).or_insert(0) += 1;
            bus.nack(&d, Duration::ZERO).await.unwrap();
        }
    }
    assert_eq!(attempts.get("fragile"), Some(&1));
    assert_eq!(attempts.get("sturdy"), Some(&3));
    let mut letters: Vec<_> = bus
        .dead_letters()
        .await
        .unwrap()
        .into_iter()
        .map(|l| (l.queue.unwrap_or_default(), l.reason))
        .collect();
    letters.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        letters,
        [
            ("fragile".to_owned(), DeadReason::MaxDeliver { attempts: 1 }),
            ("sturdy".to_owned(), DeadReason::MaxDeliver { attempts: 3 }),
        ]
    );
}
