//! The outputs of a delivery, journaled before they are sent: a delivery handled again (a
//! redelivery after a crash, a resumed run, another replica) sends the recorded items, with
//! their ids, again instead of handling it again; the bus takes them as duplicates. Items carry
//! the task they belong to ([`in_task`]).
//!
//! A run on a store of its own ([`recorded`], [`commit`]) keeps the record, the items and the
//! ack of the delivery in one commit instead: nothing is sent twice.

use std::future::Future;

use chorus_bus::{AgentError, Bus, BusError, Delivery};
use serde_json::{Value, json};

use super::error::FlowError;

use crate::agents::{Item, key_digest};
use crate::journal::{Book, Journal, JournalError};

/// What `agent` sends for `input` in `task_id`: the recorded outputs when there are some, else
/// those of `handle`, recorded first (when another handler recorded first, its outputs).
pub(super) async fn once<F, Fut>(
    journal: &dyn Journal,
    agent: &str,
    input: &Item,
    task_id: &str,
    handle: F,
) -> Result<Vec<Item>, AgentError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Vec<Item>, AgentError>>,
{
    let fail = |e: String| AgentError::new(agent, e);
    let failed = |e: JournalError| AgentError::new(agent, e.to_string());
    let book = Book::new(agent, task_id);
    let key = outputs_key(input);
    if let Some(record) = journal.find(&book, &key).await.map_err(failed)? {
        return items_of(&record).map_err(fail);
    }
    let items: Vec<Item> = handle()
        .await?
        .into_iter()
        .map(|i| in_task(i, task_id))
        .collect();
    let record = json!({"items": items.iter().map(Item::to_json).collect::<Vec<_>>()});
    if journal.record(&book, &key, &record).await.map_err(failed)? {
        return Ok(items);
    }
    let record = journal.find(&book, &key).await.map_err(failed)?;
    items_of(&record.unwrap_or_default()).map_err(fail)
}

/// The outputs a delivery's handling recorded in a run's store, found by [`recorded`].
pub(super) struct Recorded {
    /// The items, each in its task.
    pub items: Vec<Item>,
    /// Stored with the record (by [`commit`]); else recorded by a journal before they were
    /// sent, and to be sent again.
    pub stored: bool,
}

/// The outputs `agent` recorded for `input` in `task_id` in `bus`, the run's store, if any.
/// On NATS and Redis a commit cut short by a crash has its items published again here
/// (de-duplicated by id).
pub(super) async fn recorded(
    bus: &dyn Bus,
    agent: &str,
    input: &Item,
    task_id: &str,
) -> Result<Option<Recorded>, FlowError> {
    let handler = Book::new(agent, task_id).handler();
    let key = outputs_key(input);
    if !bus
        .already_handled(&handler, &key)
        .await
        .map_err(store_failed)?
    {
        return Ok(None);
    }
    let effects = bus.effects(&handler).await.map_err(store_failed)?;
    let Some(effect) = effects.into_iter().find(|e| e.message_id == key) else {
        // Pruned by retention since: the items are long stored (or expired).
        return Ok(Some(Recorded {
            items: Vec::new(),
            stored: true,
        }));
    };
    let record: Value = serde_json::from_slice(&effect.record)
        .map_err(|e| FlowError::Failed(format!("a recorded output does not parse: {e}")))?;
    Ok(Some(Recorded {
        items: items_of(&record).map_err(FlowError::Failed)?,
        stored: record.get("stored") == Some(&Value::Bool(true)),
    }))
}

/// Records `items`, the outputs `agent` made for `delivery` of `input` in `task_id`, stores
/// them and acks the delivery in `bus`, in one commit ([`chorus_bus::Backend::commit_once_and_ack`]:
/// one transaction on PostgreSQL; on the other stores the record and the items together, then
/// the ack). The items to show: these, or those another handler committed first.
pub(super) async fn commit(
    bus: &dyn Bus,
    delivery: &Delivery,
    agent: &str,
    input: &Item,
    task_id: &str,
    items: Vec<Item>,
) -> Result<Vec<Item>, FlowError> {
    let items: Vec<Item> = items.into_iter().map(|i| in_task(i, task_id)).collect();
    let mut outgoing = Vec::with_capacity(items.len());
    for item in &items {
        let bytes =
            serde_json::to_vec(&item.to_json()).map_err(|e| FlowError::Failed(e.to_string()))?;
        outgoing.push(
            bus.route_document(bytes)
                .await
                .map_err(|e| refused(item, e))?,
        );
    }
    let record = json!({
        "items": items.iter().map(Item::to_json).collect::<Vec<_>>(),
        "stored": true,
    });
    let bytes = serde_json::to_vec(&record).map_err(|e| FlowError::Failed(e.to_string()))?;
    let handler = Book::new(agent, task_id).handler();
    let key = outputs_key(input);
    let applied = bus
        .commit_once_and_ack(delivery, &handler, &key, &bytes, &outgoing)
        .await
        .map_err(store_failed)?;
    if applied {
        return Ok(items);
    }
    Ok(recorded(bus, agent, input, task_id)
        .await?
        .map(|r| r.items)
        .unwrap_or_default())
}

/// Why the bus did not take `item`: its refusal with the issues, or the store's error.
pub(super) fn refused(item: &Item, e: BusError) -> FlowError {
    match e {
        BusError::Invalid { issues, .. } => {
            let issues: Vec<String> = issues.iter().map(ToString::to_string).collect();
            FlowError::Failed(format!(
                "the bus refused {}: {}",
                item.describe(),
                issues.join("; ")
            ))
        }
        e => FlowError::Failed(e.to_string()),
    }
}

fn store_failed(e: BusError) -> FlowError {
    FlowError::Failed(e.to_string())
}

/// The journal key of the outputs for `input`.
fn outputs_key(input: &Item) -> String {
    format!("outputs-{}", key_digest(&input.journal_id()))
}

/// The items of an outputs record.
fn items_of(record: &Value) -> Result<Vec<Item>, String> {
    record
        .get("items")
        .and_then(Value::as_array)
        .ok_or("a recorded output without items")?
        .iter()
        .map(Item::from_json)
        .collect()
}

/// `item` with `task_id` as `metadata.task_id` when it is a message without one.
pub(super) fn in_task(item: Item, task_id: &str) -> Item {
    match item {
        Item::Message(mut message) => {
            let metadata = message.metadata.get_or_insert_with(Default::default);
            metadata
                .extra
                .entry("task_id")
                .or_insert_with(|| task_id.to_owned().into());
            Item::Message(message)
        }
        other => other,
    }
}
