//! Delivery history: what happened to each copy of a message, send by send: which stream of
//! which reader it was sent to, whether it was handed over to another stream or back to the
//! store, nacked, acknowledged or dead-lettered, and when.
//!
//! Events are effect records of the handler `deliveries/<message id>` in the hub's store, keyed
//! by inbox, attempt, stream and step (a step is written once, whichever replica writes it), so
//! every replica reads the same history and the pruner removes it with the other records after
//! `[retention] records_secs`. They are written in the background: a delivery or an ack never
//! waits for its history, and when the store falls behind by more than [`BACKLOG`] events the
//! newest are dropped, counted in `chorus_history_dropped_total` (the message itself is never
//! affected). Expiry and the store's own dead-lettering are in the message's dead letters.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use chorus_bus::{Bus, BusResult, now_ms};
use prometheus_client::metrics::counter::Counter;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use utoipa::ToSchema;

/// Events waiting to be written, at most; past it the newest are dropped.
pub const BACKLOG: usize = 10_000;

/// Events written to the store at once.
const WRITE_BATCH: usize = 64;

/// What happened to a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Sent to a reader's stream (again, after a hand-over, when `from_stream` is set).
    Sent,
    /// The stream closed and no other stream of the inbox took it within `hand_back_ms`: it
    /// went back to the store, to come again as the next attempt.
    HandedBack,
    /// The reader gave it back (`delay_ms` later).
    Nacked,
    /// Done.
    Acked,
    /// The reader gave up on it, or nacked its last attempt: a dead letter.
    DeadLettered,
}

/// One event of a message's history in one inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Event {
    /// The inbox (agent or pool) the copy is in.
    pub queue: String,
    /// The store's delivery attempt, from 1.
    pub attempt: u32,
    /// What happened.
    pub step: Step,
    /// The inbox stream it was sent on or settled from (numbered by the replica that served it).
    pub stream: u64,
    /// Who read or settled it: an agent id, or `admin`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<String>,
    /// For a send after a hand-over: the stream that held it before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_stream: Option<u64>,
    /// For a nack: when it comes again, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// When, in Unix milliseconds.
    pub at_ms: i64,
}

impl Event {
    /// An event of `step` for attempt `attempt` of a copy in `queue`, on `stream`, now.
    pub fn new(queue: &str, attempt: u32, step: Step, stream: u64) -> Event {
        Event {
            queue: queue.to_owned(),
            attempt,
            step,
            stream,
            reader: None,
            from_stream: None,
            delay_ms: None,
            at_ms: now_ms(),
        }
    }

    /// The same, read or settled by `reader`.
    pub fn by(mut self, reader: &str) -> Event {
        self.reader = Some(reader.to_owned());
        self
    }

    /// The key the event is written under: one of each step per inbox, attempt and stream.
    fn key(&self) -> String {
        let step = serde_json::to_value(self.step).unwrap_or_default();
        let step = step.as_str().unwrap_or("step");
        format!("{}/{}/{}/{step}", self.queue, self.attempt, self.stream)
    }
}

/// The handler whose effects are the history of `message_id`.
fn handler(message_id: &str) -> String {
    format!("deliveries/{message_id}")
}

/// The receiving end of the events on their way to the store.
type Events = mpsc::Receiver<(String, Event)>;

/// The store and the receiving end, until the writer is started.
type Unstarted = Option<(Arc<dyn Bus>, Events)>;

/// Where events go on their way to the store.
#[derive(Clone)]
pub struct History {
    events: Option<mpsc::Sender<(String, Event)>>,
    /// The store and the receiving end, until the first event starts the writer (a server is
    /// built before its runtime may be running; events only come from within it).
    writer: Arc<Mutex<Unstarted>>,
    started: Arc<AtomicBool>,
    dropped: Counter,
}

impl History {
    /// A history written to `bus` by a background task; `enabled` false records nothing.
    pub fn start(bus: Arc<dyn Bus>, enabled: bool, dropped: Counter) -> History {
        let (events, writer) = if enabled {
            let (tx, rx) = mpsc::channel(BACKLOG);
            (Some(tx), Some((bus, rx)))
        } else {
            (None, None)
        };
        History {
            events,
            writer: Arc::new(Mutex::new(writer)),
            started: Arc::new(AtomicBool::new(false)),
            dropped,
        }
    }

    /// Records `event` of `message_id`, never waiting: dropped (and counted) when the store
    /// is [`BACKLOG`] events behind.
    pub fn record(&self, message_id: &str, event: Event) {
        let Some(events) = &self.events else { return };
        if !self.started.swap(true, Ordering::AcqRel) {
            let writer = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
            if let Some((bus, rx)) = writer {
                tokio::spawn(write_all(bus, rx));
            }
        }
        if events.try_send((message_id.to_owned(), event)).is_err() {
            self.dropped.inc();
        }
    }

    /// The history of `message_id`, in time order (then in the order of the steps).
    pub async fn of(bus: &dyn Bus, message_id: &str) -> BusResult<Vec<Event>> {
        let mut events: Vec<Event> = bus
            .effects(&handler(message_id))
            .await?
            .into_iter()
            .filter_map(|e| serde_json::from_slice(&e.record).ok())
            .collect();
        events.sort_by_key(|e| (e.at_ms, e.attempt, e.step as u8));
        Ok(events)
    }
}

/// Writes the events as they come, up to [`WRITE_BATCH`] at once (the SQLite writer commits
/// them together), until every sender is gone.
async fn write_all(bus: Arc<dyn Bus>, mut rx: mpsc::Receiver<(String, Event)>) {
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    while rx.recv_many(&mut batch, WRITE_BATCH).await > 0 {
        let writes = batch.drain(..).map(|(message_id, event)| {
            let bus = bus.clone();
            async move {
                let record = serde_json::to_vec(&event).unwrap_or_default();
                bus.commit_once(&handler(&message_id), &event.key(), &record, &[])
                    .await
            }
        });
        for written in futures::future::join_all(writes).await {
            if let Err(e) = written {
                tracing::warn!(error = %e, "a delivery history event was not written");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_has_its_own_key_per_inbox_attempt_and_stream() {
        let sent = Event::new("pool", 1, Step::Sent, 7).by("r1");
        assert_eq!(sent.key(), "pool/1/7/sent");
        assert_eq!(
            Event::new("pool", 2, Step::HandedBack, 7).key(),
            "pool/2/7/handed_back"
        );
        let json = serde_json::to_value(&sent).unwrap();
        assert_eq!(json["step"], "sent");
        assert_eq!(json["reader"], "r1");
        assert!(json.get("delay_ms").is_none(), "{json}");
    }

    #[tokio::test]
    async fn events_reach_the_store_in_the_background_and_are_read_in_time_order() {
        let bus: Arc<dyn Bus> = Arc::new(chorus_bus::MemoryBus::new(Default::default()));
        let history = History::start(bus.clone(), true, Counter::default());
        let mut sent = Event::new("pool", 1, Step::Sent, 1).by("r1");
        sent.at_ms = 10;
        let mut acked = Event::new("pool", 1, Step::Acked, 1).by("r1");
        acked.at_ms = 20;
        history.record("m-1", acked.clone());
        history.record("m-1", sent.clone());
        history.record("m-1", sent.clone());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let events = History::of(bus.as_ref(), "m-1").await.unwrap();
            if events.len() == 2 {
                assert_eq!(events, [sent, acked], "once each, sent first");
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{events:?}");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let off = History::start(bus.clone(), false, Counter::default());
        off.record("m-2", Event::new("q", 1, Step::Sent, 1));
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(History::of(bus.as_ref(), "m-2").await.unwrap().is_empty());
    }
}
