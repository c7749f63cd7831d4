//! The outputs of a delivery, journaled before they are sent: a delivery handled again (a
//! redelivery after a crash, a resumed run, another replica) sends the recorded items, with
//! their ids, again instead of handling it again; the bus takes them as duplicates. Items carry
//! the task they belong to ([`in_task`]).

use std::future::Future;

use chorus_bus::AgentError;
use serde_json::{Value, json};

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
