//! Deliveries handed to agents and not yet settled, numbered per inbox for `Last-Event-ID`.
//!
//! Every open stream of an inbox is a competing consumer: a held delivery belongs to at most one
//! stream at a time. When a stream closes, the deliveries it held and did not settle are handed
//! back at once to the inbox's other streams (and to the next one to open), without waiting for
//! the ack deadline.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chorus_bus::Delivery;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// Held deliveries of every inbox; event ids are `<server run>-<sequence>`.
///
/// A delivery whose lease (the ack wait, started again by `in-progress`) has passed is no longer
/// offered or counted: the store delivers it again, or dead-letters it. It is forgotten once a
/// second ack wait has passed too (a late ack until then still reaches the store).
pub struct Inboxes {
    run: String,
    ack_wait: Duration,
    /// Inboxes whose agent has an ack wait of its own.
    ack_waits: HashMap<String, Duration>,
    next_stream: AtomicU64,
    /// The last sequence number given, across inboxes (so an inbox can be forgotten when empty).
    last_seq: AtomicU64,
    agents: Mutex<HashMap<String, Held>>,
    /// Woken when a held delivery is settled or handed back, so waiting streams look again.
    changed: Notify,
}

/// One held delivery and the stream it was sent on (none once that stream closed).
struct Entry {
    delivery: Delivery,
    since: Instant,
    lease_until: Instant,
    stream: Option<u64>,
}

impl Held {
    /// Forgets deliveries whose lease ended more than `grace` ago.
    fn sweep(&mut self, now: Instant, grace: Duration) {
        let Held { by_seq, seq_of } = self;
        by_seq.retain(|_, e| {
            let keep = e.lease_until + grace > now;
            if !keep {
                seq_of.remove(&e.delivery.envelope.id);
            }
            keep
        });
    }
}

#[derive(Default)]
struct Held {
    by_seq: BTreeMap<u64, Entry>,
    seq_of: HashMap<String, u64>,
}

impl Inboxes {
    /// Inboxes whose deliveries are leased for `ack_wait`, as the store's.
    pub fn new(ack_wait: Duration) -> Inboxes {
        Inboxes {
            run: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
            ack_wait,
            ack_waits: HashMap::new(),
            next_stream: AtomicU64::new(1),
            last_seq: AtomicU64::new(0),
            agents: Mutex::default(),
            changed: Notify::new(),
        }
    }

    /// The same inboxes, with their own ack wait for the inboxes in `ack_waits` (as the store's
    /// per-queue settings).
    pub fn with_ack_waits(mut self, ack_waits: HashMap<String, Duration>) -> Inboxes {
        self.ack_waits = ack_waits;
        self
    }

    /// How long a delivery of `inbox` is leased.
    fn ack_wait_of(&self, inbox: &str) -> Duration {
        self.ack_waits.get(inbox).copied().unwrap_or(self.ack_wait)
    }

    /// A new stream's number, unique for the server's run.
    pub fn open_stream(&self) -> u64 {
        self.next_stream.fetch_add(1, Ordering::Relaxed)
    }

    /// Keeps a new delivery for `agent`'s inbox, sent on `stream` (replacing an older delivery
    /// of the same message); returns its sequence number.
    pub fn hold(&self, agent: &str, stream: u64, delivery: Delivery) -> u64 {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let held = agents.entry(agent.to_owned()).or_default();
        let now = Instant::now();
        held.sweep(now, self.ack_wait_of(agent));
        let seq = self.last_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let id = delivery.envelope.id.clone();
        if let Some(old) = held.seq_of.insert(id, seq) {
            held.by_seq.remove(&old);
        }
        held.by_seq.insert(
            seq,
            Entry {
                delivery,
                since: now,
                lease_until: now + self.ack_wait_of(agent),
                stream: Some(stream),
            },
        );
        seq
    }

    /// Takes for `stream` the first held delivery of `agent` numbered after `after` that no open
    /// stream holds.
    pub fn claim_after(&self, agent: &str, stream: u64, after: u64) -> Option<(u64, Delivery)> {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let held = agents.get_mut(agent)?;
        let now = Instant::now();
        let (seq, entry) = held
            .by_seq
            .range_mut(after + 1..)
            .find(|(_, e)| e.stream.is_none() && e.lease_until > now)?;
        entry.stream = Some(stream);
        Some((*seq, entry.delivery.clone()))
    }

    /// How many deliveries `stream` holds unsettled.
    pub fn in_flight(&self, agent: &str, stream: u64) -> usize {
        let agents = self.agents.lock().expect("inboxes lock");
        let now = Instant::now();
        agents.get(agent).map_or(0, |held| {
            held.by_seq
                .values()
                .filter(|e| e.stream == Some(stream) && e.lease_until > now)
                .count()
        })
    }

    /// Hands back what `stream` held and did not settle: other streams of the inbox take it.
    pub fn release(&self, agent: &str, stream: u64) {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let Some(held) = agents.get_mut(agent) else {
            return;
        };
        held.sweep(Instant::now(), self.ack_wait_of(agent));
        let mut any = false;
        for entry in held.by_seq.values_mut() {
            if entry.stream == Some(stream) {
                entry.stream = None;
                any = true;
            }
        }
        if held.by_seq.is_empty() {
            agents.remove(agent);
        }
        drop(agents);
        if any {
            self.changed.notify_waiters();
        }
    }

    /// A future that completes at the next settle or hand-back; create it before looking.
    pub fn changed(&self) -> Notified<'_> {
        self.changed.notified()
    }

    /// The held delivery of `message_id` for `agent`, and how long it has been held.
    pub fn get(&self, agent: &str, message_id: &str) -> Option<(Delivery, Duration)> {
        let agents = self.agents.lock().expect("inboxes lock");
        let held = agents.get(agent)?;
        let entry = held.by_seq.get(held.seq_of.get(message_id)?)?;
        Some((entry.delivery.clone(), entry.since.elapsed()))
    }

    /// Starts the lease of the held delivery of `message_id` again (after `in-progress`).
    pub fn renew(&self, agent: &str, message_id: &str) {
        let mut agents = self.agents.lock().expect("inboxes lock");
        if let Some(held) = agents.get_mut(agent)
            && let Some(seq) = held.seq_of.get(message_id)
            && let Some(entry) = held.by_seq.get_mut(seq)
        {
            entry.lease_until = Instant::now() + self.ack_wait_of(agent);
        }
    }

    /// Forgets the delivery of `message_id` once settled, unless a newer delivery replaced it.
    pub fn settle(&self, agent: &str, delivery: &Delivery) {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let Some(held) = agents.get_mut(agent) else {
            return;
        };
        let id = &delivery.envelope.id;
        if let Some(&seq) = held.seq_of.get(id)
            && held
                .by_seq
                .get(&seq)
                .is_some_and(|e| e.delivery.token == delivery.token)
        {
            held.seq_of.remove(id);
            held.by_seq.remove(&seq);
            if held.by_seq.is_empty() {
                agents.remove(agent);
            }
        }
        drop(agents);
        self.changed.notify_waiters();
    }

    /// The SSE event id of sequence number `seq`.
    pub fn event_id(&self, seq: u64) -> String {
        format!("{}-{seq}", self.run)
    }

    /// The sequence number of an event id of this server run (0 for any other run or none):
    /// a client resumes after it.
    pub fn resume_after(&self, last_event_id: Option<&str>) -> u64 {
        last_event_id
            .and_then(|s| s.strip_prefix(self.run.as_str()))
            .and_then(|s| s.strip_prefix('-'))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_bus::Envelope;
    use std::sync::Arc;

    fn delivery(id: &str, token: &str) -> Delivery {
        Delivery {
            envelope: Arc::new(Envelope::new(id, vec!["a".into()], vec![])),
            queue: "a".into(),
            attempt: 1,
            token: token.into(),
        }
    }

    #[test]
    fn resumes_after_the_last_event_and_replaces_redeliveries() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let first = inboxes.open_stream();
        let s1 = inboxes.hold("a", first, delivery("m1", "t1"));
        let s2 = inboxes.hold("a", first, delivery("m2", "t2"));
        inboxes.release("a", first);
        let stream = inboxes.open_stream();
        assert_eq!(inboxes.claim_after("a", stream, 0).unwrap().0, s1);
        assert_eq!(inboxes.claim_after("a", stream, s1).unwrap().0, s2);
        assert!(inboxes.claim_after("a", stream, s2).is_none());
        let s3 = inboxes.hold("a", stream, delivery("m1", "t3"));
        assert_eq!(inboxes.in_flight("a", stream), 2);
        assert_eq!(inboxes.get("a", "m1").unwrap().0.token, "t3");
        inboxes.settle("a", &delivery("m1", "t1"));
        assert!(
            inboxes.get("a", "m1").is_some(),
            "a stale settle keeps the newer delivery"
        );
        inboxes.settle("a", &delivery("m1", "t3"));
        assert!(inboxes.get("a", "m1").is_none());
        assert_eq!(inboxes.resume_after(Some(&inboxes.event_id(s3))), s3);
        assert_eq!(inboxes.resume_after(Some("otherrun-5")), 0);
        assert_eq!(inboxes.resume_after(None), 0);
    }

    #[test]
    fn a_held_delivery_belongs_to_one_stream_until_that_stream_closes() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (a, b) = (inboxes.open_stream(), inboxes.open_stream());
        inboxes.hold("pool", a, delivery("m1", "t1"));
        assert!(
            inboxes.claim_after("pool", b, 0).is_none(),
            "held by a, not offered to b"
        );
        assert_eq!(inboxes.in_flight("pool", a), 1);
        assert_eq!(inboxes.in_flight("pool", b), 0);
        inboxes.release("pool", a);
        let (_, d) = inboxes.claim_after("pool", b, 0).expect("handed back to b");
        assert_eq!(d.envelope.id, "m1");
        assert!(
            inboxes.claim_after("pool", a, 0).is_none(),
            "b holds it now"
        );
        assert_eq!(inboxes.in_flight("pool", b), 1);
    }
}
