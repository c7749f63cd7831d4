//! Peeking at a queue: what it holds, in delivery order, with nothing claimed.

use std::sync::Arc;
use std::time::Duration;

use chorus_bus::{Bus, BusConfig, Priority, Queued, QueuedState, now_ms};
use serde_json::json;

use super::{Fixture, LONG, mid, one, packet, publish, quick, uid};

/// The ids, priorities, attempts and state names a peek shows.
fn shown(peeked: &[Queued]) -> Vec<(String, Priority, Option<u32>, &'static str)> {
    peeked
        .iter()
        .map(|q| {
            let e = &q.envelope;
            (e.id.clone(), e.priority, q.attempts, q.state.name())
        })
        .collect()
}

async fn peek(bus: &Arc<dyn Bus>, queue: &str) -> Vec<Queued> {
    bus.peek(queue, 100).await.expect("peek")
}

pub async fn peek_shows_a_queue_without_claiming(f: &Fixture) {
    // A lease long enough not to run out while the test looks at it on a busy machine.
    let config = BusConfig {
        ack_wait: Duration::from_secs(30),
        ..quick()
    };
    let ack_wait = config.ack_wait.as_millis() as i64;
    let bus = (f.open)(config).await;
    let queue = uid("inbox");
    assert!(peek(&bus, &queue).await.is_empty(), "a queue never used");
    let ids = [mid(), mid(), mid()];
    for (id, priority) in ids.iter().zip(["LOW", "CRITICAL", "MEDIUM"]) {
        publish(&bus, &packet(id, json!(queue), priority, "NOTIFICATION")).await;
    }
    let [low, critical, medium] = ids;
    let fresh = |id: &String, p| (id.clone(), p, Some(0), "ready");
    let waiting = vec![
        fresh(&critical, Priority::Critical),
        fresh(&medium, Priority::Medium),
        fresh(&low, Priority::Low),
    ];
    for _ in 0..10 {
        assert_eq!(shown(&peek(&bus, &queue).await), waiting, "delivery order");
    }
    let first = peek(&bus, &queue).await.remove(0);
    assert_eq!(first.envelope.sender.as_deref(), Some("sender"));
    assert_eq!(first.envelope.handoff_type.as_deref(), Some("NOTIFICATION"));
    assert_eq!(first.envelope.recipients, std::slice::from_ref(&queue));
    let doc: serde_json::Value = serde_json::from_slice(&first.envelope.bytes).unwrap();
    assert_eq!(doc["metadata"]["message_id"], critical.as_str());
    assert_eq!(
        shown(&bus.peek(&queue, 2).await.unwrap()),
        waiting[..2],
        "at most the limit, from the front"
    );
    assert!(bus.peek(&queue, 0).await.unwrap().is_empty());

    let held = one(&bus, &queue, LONG).await.expect("a delivery");
    assert_eq!(
        (held.envelope.id.as_str(), held.attempt),
        (critical.as_str(), 1),
        "ten peeks counted no attempt"
    );
    let before = now_ms();
    let seen = peek(&bus, &queue).await;
    assert_eq!(shown(&seen)[1..], waiting[1..], "the others still wait");
    let taken = &seen[0];
    assert_eq!(
        (taken.envelope.id.as_str(), taken.attempts),
        (critical.as_str(), Some(1))
    );
    assert!(taken.state.may_be_held(), "held: {:?}", taken.state);
    if let Some(until) = taken.state.until_ms() {
        assert!(
            until > before - 50 && until <= now_ms() + ack_wait + 50,
            "the lease ends within ack_wait: {until} (now {before})"
        );
    }
    assert_eq!(
        bus.depth(&queue).await.unwrap(),
        3,
        "peek took nothing away"
    );

    bus.ack(&held).await.unwrap();
    assert_eq!(
        shown(&peek(&bus, &queue).await),
        waiting[1..],
        "an acknowledged message is gone"
    );
    // Given back with a delay: not ready, its one attempt kept.
    let next = one(&bus, &queue, LONG).await.expect("a delivery");
    bus.nack(&next, Duration::from_secs(60)).await.unwrap();
    let again = peek(&bus, &queue).await;
    assert_eq!(again[0].envelope.id, next.envelope.id);
    assert_eq!(again[0].attempts, Some(1));
    assert!(
        matches!(
            again[0].state,
            QueuedState::Delayed { .. }
                | QueuedState::HeldOrDelayed { .. }
                | QueuedState::Delivered
        ),
        "delayed: {:?}",
        again[0].state
    );
    assert_eq!(shown(&again[1..]), waiting[2..]);
    // Delivered twice: the count says so wherever the store keeps it per message.
    let last = one(&bus, &queue, LONG).await.expect("a delivery");
    bus.nack(&last, Duration::ZERO).await.unwrap();
    let redelivered = one(&bus, &queue, LONG).await.expect("a redelivery");
    assert_eq!((&redelivered.envelope.id, redelivered.attempt), (&low, 2));
    let seen = peek(&bus, &queue).await;
    let twice = seen
        .iter()
        .find(|q| q.envelope.id == low)
        .expect("still there");
    assert!(twice.state.may_be_held(), "held: {:?}", twice.state);
    match (twice.attempts, twice.state) {
        (Some(2), _) | (None, QueuedState::Delivered) => {}
        other => panic!("attempts after a redelivery: {other:?}"),
    }
}
