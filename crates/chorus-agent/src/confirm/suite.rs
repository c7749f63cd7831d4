//! One behaviour suite every confirmations store passes.

use super::{ConfirmError, Confirmation, ConfirmationState, Confirmations};

fn call(call_id: &str) -> Confirmation {
    Confirmation::pending(
        "ops",
        "delete_db",
        call_id,
        r#"{"name":"prod"}"#,
        Some("task-1".into()),
    )
}

/// Requesting the same (agent, call id) twice returns the first record.
pub(crate) async fn request_is_idempotent(store: &dyn Confirmations) {
    let first = store.request(call("c1")).await.unwrap();
    let again = store.request(call("c1")).await.unwrap();
    assert_eq!(again.id, first.id);
    assert_eq!(first.state, ConfirmationState::Pending);
    let other_agent = Confirmation {
        agent: "billing".into(),
        ..call("c1")
    };
    let other = store.request(other_agent).await.unwrap();
    assert_ne!(other.id, first.id);
    assert_eq!(store.list(None).await.unwrap().len(), 2);
    assert_eq!(store.get(&first.id).await.unwrap(), Some(first));
    assert_eq!(store.get("missing").await.unwrap(), None);
}

/// Approve, consume once with the same arguments; a second consume is refused.
pub(crate) async fn approve_then_consume_once(store: &dyn Confirmations) {
    let c = store.request(call("c1")).await.unwrap();
    let approved = store
        .decide(&c.id, true, "admin", Some("ok".into()))
        .await
        .unwrap();
    assert_eq!(approved.state, ConfirmationState::Approved);
    assert_eq!(approved.decided_by.as_deref(), Some("admin"));
    assert_eq!(approved.note.as_deref(), Some("ok"));
    let used = store.consume(&c.id, &c.arguments).await.unwrap();
    assert_eq!(used.state, ConfirmationState::Consumed);
    let again = store.consume(&c.id, &c.arguments).await.unwrap_err();
    assert!(
        matches!(
            again,
            ConfirmError::WrongState {
                state: ConfirmationState::Consumed,
                ..
            }
        ),
        "{again}"
    );
    let listed = store.list(Some(ConfirmationState::Consumed)).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(
        store
            .list(Some(ConfirmationState::Pending))
            .await
            .unwrap()
            .is_empty()
    );
}

/// Pending and rejected confirmations cannot be consumed; deciding twice is refused.
pub(crate) async fn pending_and_rejected_refuse(store: &dyn Confirmations) {
    let c = store.request(call("c1")).await.unwrap();
    let early = store.consume(&c.id, &c.arguments).await.unwrap_err();
    assert!(
        matches!(
            early,
            ConfirmError::WrongState {
                state: ConfirmationState::Pending,
                ..
            }
        ),
        "{early}"
    );
    let rejected = store.decide(&c.id, false, "admin", None).await.unwrap();
    assert_eq!(rejected.state, ConfirmationState::Rejected);
    let twice = store.decide(&c.id, true, "admin", None).await.unwrap_err();
    assert!(
        matches!(
            twice,
            ConfirmError::WrongState {
                state: ConfirmationState::Rejected,
                ..
            }
        ),
        "{twice}"
    );
    let used = store.consume(&c.id, &c.arguments).await.unwrap_err();
    assert!(
        matches!(
            used,
            ConfirmError::WrongState {
                state: ConfirmationState::Rejected,
                ..
            }
        ),
        "{used}"
    );
    let missing = store.decide("nope", true, "admin", None).await.unwrap_err();
    assert!(matches!(missing, ConfirmError::NotFound(_)), "{missing}");
    let missing = store.consume("nope", "{}").await.unwrap_err();
    assert!(matches!(missing, ConfirmError::NotFound(_)), "{missing}");
}

/// Changed arguments are refused and leave the approval unused.
pub(crate) async fn changed_arguments_refused(store: &dyn Confirmations) {
    let c = store.request(call("c1")).await.unwrap();
    store.decide(&c.id, true, "admin", None).await.unwrap();
    let changed = store
        .consume(&c.id, r#"{"name": "prod"}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(changed, ConfirmError::ArgumentsChanged(_)),
        "{changed}"
    );
    let still = store.get(&c.id).await.unwrap().unwrap();
    assert_eq!(still.state, ConfirmationState::Approved);
    store.consume(&c.id, &c.arguments).await.unwrap();
}

/// Pages of two walk every confirmation once, oldest first; a state filters them.
pub(crate) async fn pages_walk_every_confirmation_once(store: &dyn Confirmations) {
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(store.request(call(&format!("p{i}"))).await.unwrap().id);
    }
    store.decide(&made[1], false, "admin", None).await.unwrap();
    let (mut seen, mut after) = (Vec::new(), None::<String>);
    loop {
        let page = store.page(None, after.as_deref(), 2).await.unwrap();
        assert!(page.items.len() <= 2);
        assert_eq!(page.total, Some(5));
        seen.extend(page.items.into_iter().map(|c| (c.created_at_ms, c.id)));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert!(
        seen.windows(2).all(|w| w[0] < w[1]),
        "oldest first (then by id), none twice: {seen:?}"
    );
    let mut ids: Vec<String> = seen.into_iter().map(|(_, id)| id).collect();
    ids.sort();
    made.sort();
    assert_eq!(ids, made, "every confirmation");
    let pending = store
        .page(Some(ConfirmationState::Pending), None, 10)
        .await
        .unwrap();
    assert_eq!(
        (pending.items.len(), pending.total, pending.next),
        (4, Some(4), None)
    );
    let bad = store.page(None, Some("tomorrow"), 2).await.unwrap_err();
    assert!(matches!(bad, ConfirmError::BadCursor(_)), "{bad}");
}

/// A prune removes rejected and consumed confirmations created before its time, nothing else.
pub(crate) async fn prune_removes_old_finished_ones_only(store: &dyn Confirmations) {
    let rejected = store.request(call("r1")).await.unwrap();
    store
        .decide(&rejected.id, false, "admin", None)
        .await
        .unwrap();
    let used = store.request(call("u1")).await.unwrap();
    store.decide(&used.id, true, "admin", None).await.unwrap();
    store.consume(&used.id, &used.arguments).await.unwrap();
    let approved = store.request(call("a1")).await.unwrap();
    store
        .decide(&approved.id, true, "admin", None)
        .await
        .unwrap();
    let pending = store.request(call("w1")).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let boundary = Confirmation::pending("x", "x", "x", "x", None).created_at_ms;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let fresh = store.request(call("r2")).await.unwrap();
    store.decide(&fresh.id, false, "admin", None).await.unwrap();

    assert_eq!(store.prune(0).await.unwrap(), 0);
    assert_eq!(store.prune(boundary).await.unwrap(), 2);
    let mut left: Vec<String> = store
        .list(None)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    left.sort();
    let mut want = vec![approved.id, pending.id, fresh.id];
    want.sort();
    assert_eq!(left, want);
    assert_eq!(store.get(&rejected.id).await.unwrap(), None);
}

/// Declares the suite's tests for a store built by `$make` (an async expression).
macro_rules! confirmations_suite {
    ($make:expr) => {
        #[tokio::test]
        async fn request_is_idempotent() {
            let store = $make;
            crate::confirm::suite::request_is_idempotent(&store).await;
        }
        #[tokio::test]
        async fn approve_then_consume_once() {
            let store = $make;
            crate::confirm::suite::approve_then_consume_once(&store).await;
        }
        #[tokio::test]
        async fn pending_and_rejected_refuse() {
            let store = $make;
            crate::confirm::suite::pending_and_rejected_refuse(&store).await;
        }
        #[tokio::test]
        async fn changed_arguments_refused() {
            let store = $make;
            crate::confirm::suite::changed_arguments_refused(&store).await;
        }
        #[tokio::test]
        async fn pages_walk_every_confirmation_once() {
            let store = $make;
            crate::confirm::suite::pages_walk_every_confirmation_once(&store).await;
        }
        #[tokio::test]
        async fn prune_removes_old_finished_ones_only() {
            let store = $make;
            crate::confirm::suite::prune_removes_old_finished_ones_only(&store).await;
        }
    };
}
pub(crate) use confirmations_suite;
