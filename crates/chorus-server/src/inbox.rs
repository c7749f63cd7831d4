//! Deliveries handed to agents and not yet settled, numbered per agent for `Last-Event-ID`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chorus_bus::Delivery;

/// Held deliveries of every agent; event ids are `<server run>-<sequence>`.
pub struct Inboxes {
    run: String,
    agents: Mutex<HashMap<String, Held>>,
}

#[derive(Default)]
struct Held {
    last_seq: u64,
    by_seq: BTreeMap<u64, Delivery>,
    seq_of: HashMap<String, (u64, Instant)>,
}

impl Default for Inboxes {
    fn default() -> Self {
        Inboxes {
            run: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
            agents: Mutex::default(),
        }
    }
}

impl Inboxes {
    /// Keeps a new delivery for `agent` (replacing an older delivery of the same message);
    /// returns its sequence number.
    pub fn hold(&self, agent: &str, delivery: Delivery) -> u64 {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let held = agents.entry(agent.to_owned()).or_default();
        held.last_seq += 1;
        let seq = held.last_seq;
        let id = delivery.envelope.id.clone();
        if let Some((old, _)) = held.seq_of.insert(id, (seq, Instant::now())) {
            held.by_seq.remove(&old);
        }
        held.by_seq.insert(seq, delivery);
        seq
    }

    /// The first held delivery of `agent` numbered after `after`.
    pub fn next_after(&self, agent: &str, after: u64) -> Option<(u64, Delivery)> {
        let agents = self.agents.lock().expect("inboxes lock");
        let held = agents.get(agent)?;
        held.by_seq
            .range(after + 1..)
            .next()
            .map(|(s, d)| (*s, d.clone()))
    }

    /// The held delivery of `message_id` for `agent`, and how long it has been held.
    pub fn get(&self, agent: &str, message_id: &str) -> Option<(Delivery, Duration)> {
        let agents = self.agents.lock().expect("inboxes lock");
        let held = agents.get(agent)?;
        let (seq, since) = held.seq_of.get(message_id)?;
        Some((held.by_seq.get(seq)?.clone(), since.elapsed()))
    }

    /// Forgets the delivery of `message_id` once settled, unless a newer delivery replaced it.
    pub fn settle(&self, agent: &str, delivery: &Delivery) {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let Some(held) = agents.get_mut(agent) else {
            return;
        };
        let id = &delivery.envelope.id;
        if let Some(&(seq, _)) = held.seq_of.get(id)
            && held
                .by_seq
                .get(&seq)
                .is_some_and(|d| d.token == delivery.token)
        {
            held.seq_of.remove(id);
            held.by_seq.remove(&seq);
        }
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
        let inboxes = Inboxes::default();
        let s1 = inboxes.hold("a", delivery("m1", "t1"));
        let s2 = inboxes.hold("a", delivery("m2", "t2"));
        assert_eq!(inboxes.next_after("a", 0).unwrap().0, s1);
        assert_eq!(inboxes.next_after("a", s1).unwrap().0, s2);
        assert!(inboxes.next_after("a", s2).is_none());
        let s3 = inboxes.hold("a", delivery("m1", "t3"));
        assert_eq!(inboxes.next_after("a", 0).unwrap().0, s2);
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
}
