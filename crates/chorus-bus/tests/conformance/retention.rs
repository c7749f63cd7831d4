//! Retention and paging guarantees: old acknowledged messages and old dead letters are pruned,
//! recent ones and messages still waiting in a queue are kept, numbering goes on, and every
//! listing can be walked a page at a time.

use std::sync::Arc;
use std::time::Duration;

use chorus_bus::{Bus, BusConfig, PruneBefore, Pruned, now_ms};
use serde_json::json;

use super::{Fixture, LONG, drain, mid, one, packet, publish, quick, uid};

/// A dedupe window short enough for the tests' cuts (a prune never reaches into it).
fn short_window() -> BusConfig {
    BusConfig {
        dedupe_window: Duration::from_millis(200),
        ..quick()
    }
}

/// How long the tests wait between "old" and "recent" entries; cuts fall in the middle.
const AGE: Duration = Duration::from_millis(800);

/// Publishes a STATUS_UPDATE of `task` (its conversation is the task) to `to`; returns its id.
async fn tracked(bus: &Arc<dyn Bus>, task: &str, to: &str) -> String {
    let id = mid();
    let mut p = packet(&id, json!(to), "LOW", "STATUS_UPDATE");
    p["metadata"]["task_id"] = json!(task);
    publish(bus, &p).await;
    id
}

/// The time halfway between the entries made before `AGE` elapsed and those made after.
async fn age_then_cut() -> i64 {
    tokio::time::sleep(AGE).await;
    now_ms() - (AGE.as_millis() as i64) / 2
}

pub async fn old_acknowledged_messages_are_pruned_and_recent_ones_kept(f: &Fixture) {
    let bus = (f.open)(short_window()).await;
    let (task, gone, inbox) = (uid("task"), uid("task-gone"), uid("inbox"));
    for _ in 0..2 {
        tracked(&bus, &task, &inbox).await;
    }
    tracked(&bus, &gone, &inbox).await;
    assert_eq!(
        drain(&bus, &inbox).await.len(),
        3,
        "the old ones are acknowledged"
    );
    let cut = age_then_cut().await;
    let recent = vec![
        tracked(&bus, &task, &inbox).await,
        tracked(&bus, &task, &inbox).await,
    ];
    assert_eq!(drain(&bus, &inbox).await, recent);

    let before = PruneBefore {
        messages_ms: Some(cut),
        dead_letters_ms: None,
        effects_ms: None,
    };
    let pruned = bus.prune(before).await.unwrap();
    assert_eq!(
        pruned,
        Pruned {
            messages: 3,
            dead_letters: 0,
            effects: 0
        }
    );
    let kept: Vec<String> = bus
        .by_task(&task)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(
        kept, recent,
        "the recent messages of the task are kept, in order"
    );
    assert!(bus.by_task(&gone).await.unwrap().is_empty());
    // The conversation (the task's id) numbers its kept entries on from the pruned ones.
    let log = bus.conversation(&task, 0, 10).await.unwrap();
    let numbered: Vec<(u64, String)> = log.into_iter().map(|e| (e.seq, e.envelope.id)).collect();
    assert_eq!(
        numbered,
        [(3, recent[0].clone()), (4, recent[1].clone())],
        "sequence numbers go on"
    );
    assert_eq!(bus.conversation(&task, 3, 10).await.unwrap().len(), 1);
    let tasks = bus.tasks(10).await.unwrap();
    assert_eq!(
        tasks.len(),
        1,
        "a task with nothing kept is no longer listed: {tasks:?}"
    );
    assert_eq!(
        (tasks[0].id.as_str(), tasks[0].messages),
        (task.as_str(), 2)
    );
    assert!(
        tasks[0].first_ms >= cut,
        "first_ms is the first kept: {tasks:?}"
    );
    assert_eq!(
        bus.prune(before).await.unwrap(),
        Pruned::default(),
        "a second prune finds nothing"
    );
}

pub async fn old_dead_letters_are_pruned_and_recent_ones_kept(f: &Fixture) {
    let bus = (f.open)(short_window()).await;
    for _ in 0..2 {
        assert!(bus.publish(b"{old".to_vec()).await.is_err());
    }
    let cut = age_then_cut().await;
    assert!(bus.publish(b"{recent".to_vec()).await.is_err());
    let inbox = uid("inbox");
    let kept_message = tracked(&bus, &uid("task"), &inbox).await;
    let pruned = bus
        .prune(PruneBefore {
            messages_ms: None,
            dead_letters_ms: Some(cut),
            effects_ms: None,
        })
        .await
        .unwrap();
    assert_eq!(
        pruned,
        Pruned {
            messages: 0,
            dead_letters: 2,
            effects: 0
        }
    );
    let left = bus.dead_letters().await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].bytes, b"{recent");
    assert_eq!(bus.dead_letter_count().await.unwrap(), 1);
    let d = one(&bus, &inbox, LONG)
        .await
        .expect("messages are untouched");
    assert_eq!(d.envelope.id, kept_message);
    bus.ack(&d).await.unwrap();
}

pub async fn an_old_unacknowledged_message_is_kept_and_delivered(f: &Fixture) {
    let bus = (f.open)(short_window()).await;
    let (task, inbox) = (uid("task"), uid("inbox"));
    let held = tracked(&bus, &task, &inbox).await;
    let waiting = tracked(&bus, &task, &inbox).await;
    let published = now_ms();
    let first = one(&bus, &inbox, LONG).await.expect("the first delivery");
    assert_eq!(first.envelope.id, held, "delivered, never acknowledged");
    let oldest = bus.oldest_waiting_ms().await.unwrap().expect("two wait");
    assert!(
        oldest <= published && oldest >= published - 5_000,
        "{oldest} vs {published}"
    );
    tokio::time::sleep(AGE).await;
    bus.prune(PruneBefore {
        messages_ms: Some(now_ms()),
        dead_letters_ms: Some(now_ms()),
        effects_ms: None,
    })
    .await
    .unwrap();
    let mut got = Vec::new();
    for _ in 0..20 {
        for d in bus.receive(&inbox, 2, LONG).await.unwrap() {
            bus.ack(&d).await.unwrap();
            got.push((d.envelope.id.clone(), !d.envelope.bytes.is_empty()));
        }
        if got.len() == 2 {
            break;
        }
    }
    got.sort();
    let mut want = vec![(held, true), (waiting, true)];
    want.sort();
    assert_eq!(got, want, "both still delivered, whole");
    assert_eq!(bus.depth(&inbox).await.unwrap(), 0);
    assert_eq!(
        bus.oldest_waiting_ms().await.unwrap(),
        None,
        "nothing waits"
    );
}

pub async fn listings_are_read_a_page_at_a_time(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let inbox = uid("inbox");
    for i in 0..5 {
        let refused = bus.publish(format!("{{bad {i}").into_bytes()).await;
        assert!(refused.is_err());
    }
    let (mut letters, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = bus.dead_letters_page(after.as_deref(), 2).await.unwrap();
        assert!(page.items.len() <= 2);
        assert_eq!(page.total, Some(5));
        letters.extend(page.items.into_iter().map(|d| d.bytes));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let want: Vec<Vec<u8>> = (0..5).map(|i| format!("{{bad {i}").into_bytes()).collect();
    assert_eq!(letters, want, "every dead letter once, oldest first");
    let last = bus.dead_letters().await.unwrap().pop().unwrap();
    assert_eq!(bus.find_dead_letter(&last.id).await.unwrap(), Some(last));
    assert_eq!(bus.find_dead_letter("no-such-letter").await.unwrap(), None);
    assert!(
        bus.dead_letters_page(Some("not a cursor"), 2)
            .await
            .is_err()
    );

    let task = uid("task");
    let mut sent = Vec::new();
    for _ in 0..5 {
        sent.push(tracked(&bus, &task, &inbox).await);
    }
    let (mut read, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = bus.task_messages(&task, after.as_deref(), 2).await.unwrap();
        assert_eq!(page.total, Some(5));
        read.extend(page.items.into_iter().map(|l| l.envelope.id));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(read, sent, "every message of the task once, in order");

    let names: Vec<String> = (0..3).map(|i| uid(&format!("t{i}"))).collect();
    for name in &names {
        tokio::time::sleep(Duration::from_millis(5)).await;
        // Distinct publish times (the sleep above), so that the order is that of activity.
        tracked(&bus, name, &inbox).await;
    }
    let (mut listed, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = bus.tasks_page(after.as_deref(), 1).await.unwrap();
        assert_eq!(page.total, Some(4));
        listed.extend(page.items.into_iter().map(|t| t.id));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let mut want: Vec<String> = names.iter().rev().cloned().collect();
    want.push(task);
    assert_eq!(listed, want, "every task once, most recently active first");
    assert!(bus.tasks_page(Some("no colon"), 1).await.is_err());
}

pub async fn the_dead_letters_of_a_message_are_found_by_its_id(f: &Fixture) {
    let bus = (f.open)(BusConfig {
        max_deliver: 1,
        ..short_window()
    })
    .await;
    let inbox = uid("inbox");
    // Any characters: the id is a subject token on NATS and part of a key on Redis.
    let (refused, waiting) = (format!("{}-задача ünï/x y", mid()), mid());
    // (A chorus message: a handoff's message_id is a UUID.)
    let message = json!({"role": "user", "id": refused, "name": "alice", "recipient": inbox,
        "content": "Привет"});
    publish(&bus, &message).await;
    publish(&bus, &packet(&waiting, json!(inbox), "LOW", "NOTIFICATION")).await;
    let d = one(&bus, &inbox, LONG).await.expect("the first message");
    assert_eq!(d.envelope.id, refused);
    bus.nack(&d, Duration::ZERO).await.unwrap();
    // A fetch that finds its deliveries spent dead-letters it on the way.
    let next = one(&bus, &inbox, LONG).await.expect("the waiting message");
    assert_eq!(next.envelope.id, waiting);
    assert!(
        one(&bus, &inbox, Duration::from_millis(200))
            .await
            .is_none()
    );
    let first = bus.dead_letters_of(&refused).await.unwrap();
    assert_eq!(
        first.len(),
        1,
        "a nack past max_deliver leaves a letter: {first:?}"
    );
    assert_eq!(first[0].message_id.as_deref(), Some(refused.as_str()));
    assert_eq!(first[0].queue.as_deref(), Some(inbox.as_str()));
    assert_eq!(first[0].reason.kind(), "max_deliver");
    assert!(
        bus.dead_letters_of(&waiting).await.unwrap().is_empty(),
        "a message held by a consumer has none"
    );
    bus.ack(&next).await.unwrap();
    assert!(
        bus.dead_letters_of(&waiting).await.unwrap().is_empty(),
        "nor a handled one"
    );

    // Bytes refused on publish that name the id are not its letters (anyone can send them).
    let forged = format!("{{\"metadata\": {{\"message_id\": \"{waiting}\"}}}}");
    bus.record_rejected(
        forged.as_bytes(),
        Some(&waiting),
        chorus_bus::DeadReason::NoRoute,
    )
    .await
    .unwrap();
    assert!(bus.dead_letters_of(&waiting).await.unwrap().is_empty());

    // A replay takes the letter away; a second failure makes another.
    bus.replay(&first[0].id).await.unwrap();
    assert!(bus.dead_letters_of(&refused).await.unwrap().is_empty());
    let again = one(&bus, &inbox, LONG).await.expect("the replayed message");
    assert_eq!(again.envelope.id, refused);
    bus.nack(&again, Duration::ZERO).await.unwrap();
    assert!(
        one(&bus, &inbox, Duration::from_millis(200))
            .await
            .is_none()
    );
    let second = bus.dead_letters_of(&refused).await.unwrap();
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(
        bus.find_dead_letter(&second[0].id).await.unwrap().as_ref(),
        Some(&second[0])
    );
    bus.remove_dead_letter(&second[0].id).await.unwrap();
    assert!(bus.dead_letters_of(&refused).await.unwrap().is_empty());

    // Until pruned.
    let doomed = mid();
    publish(&bus, &packet(&doomed, json!(inbox), "LOW", "NOTIFICATION")).await;
    let third = one(&bus, &inbox, LONG).await.expect("the third message");
    assert_eq!(third.envelope.id, doomed);
    bus.nack(&third, Duration::ZERO).await.unwrap();
    assert!(
        one(&bus, &inbox, Duration::from_millis(200))
            .await
            .is_none()
    );
    assert_eq!(bus.dead_letters_of(&doomed).await.unwrap().len(), 1);
    let cut = age_then_cut().await;
    bus.prune(PruneBefore {
        messages_ms: None,
        dead_letters_ms: Some(cut),
        effects_ms: None,
    })
    .await
    .unwrap();
    assert!(
        bus.dead_letters_of(&doomed).await.unwrap().is_empty(),
        "pruned"
    );
}

pub async fn a_dead_letter_id_is_never_handed_out_again(f: &Fixture) {
    let bus = (f.open)(quick()).await;
    let reason = || chorus_bus::DeadReason::NoRoute;
    let first = bus.record_rejected(b"{a", None, reason()).await.unwrap();
    let second = bus.record_rejected(b"{b", None, reason()).await.unwrap();
    bus.remove_dead_letter(&second).await.unwrap();
    bus.remove_dead_letter(&first).await.unwrap();
    let third = bus.record_rejected(b"{c", None, reason()).await.unwrap();
    assert!(
        third != first && third != second,
        "an id shown for a deleted letter must not name another: {first} {second} {third}"
    );
    assert_eq!(bus.find_dead_letter(&second).await.unwrap(), None);
}

pub async fn old_effect_records_are_pruned_and_their_keys_freed(f: &Fixture) {
    let bus = (f.open)(short_window()).await;
    let (book, other) = (uid("journal/a"), uid("deliveries/m"));
    for key in ["k1", "k2"] {
        assert!(bus.commit_once(&book, key, b"old", &[]).await.unwrap());
    }
    assert!(bus.commit_once(&other, "k1", b"old", &[]).await.unwrap());
    let cut = age_then_cut().await;
    assert!(bus.commit_once(&book, "k3", b"new", &[]).await.unwrap());
    assert_eq!(bus.effect_count(&book).await.unwrap(), 3);

    let before = PruneBefore {
        effects_ms: Some(cut),
        ..PruneBefore::default()
    };
    assert_eq!(
        bus.prune(before).await.unwrap(),
        Pruned {
            effects: 3,
            ..Pruned::default()
        },
        "the three records written before the cut, of both handlers"
    );
    let kept: Vec<(String, Vec<u8>)> = bus
        .effects(&book)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.message_id, e.record))
        .collect();
    assert_eq!(kept, [("k3".to_owned(), b"new".to_vec())]);
    assert_eq!(bus.effect_count(&book).await.unwrap(), 1);
    assert!(bus.effects(&other).await.unwrap().is_empty());
    // A pruned key is no longer handled: it may be written again; a kept one may not.
    assert!(!bus.already_handled(&book, "k1").await.unwrap());
    assert!(bus.commit_once(&book, "k1", b"again", &[]).await.unwrap());
    assert!(!bus.commit_once(&book, "k3", b"twice", &[]).await.unwrap());
    assert_eq!(
        bus.prune(before).await.unwrap(),
        Pruned::default(),
        "a second prune finds nothing"
    );
}
