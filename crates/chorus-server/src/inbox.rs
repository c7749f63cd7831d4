//! Deliveries handed to agents and not yet settled, numbered per inbox for `Last-Event-ID`.
//!
//! Every open stream of an inbox is a competing consumer: a held delivery belongs to at most one
//! stream at a time. When a stream closes, the deliveries it held and did not settle are handed
//! back at once to the inbox's other streams (and to the next one to open), without waiting for
//! the ack deadline.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chorus_bus::Delivery;
use tokio::sync::Notify;

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
    /// Per inbox, its open streams and what wakes them (other inboxes' streams sleep on).
    wakers: Mutex<HashMap<String, (usize, Arc<StreamWakers>)>>,
}

/// What wakes the open streams of one inbox. A settle frees room but brings nothing to send,
/// so it wakes only streams waiting for room; a hand-back brings deliveries, so it wakes only
/// streams waiting for something to send (each would otherwise ask the store again for nothing).
#[derive(Default)]
pub struct StreamWakers {
    /// A held delivery of the inbox was settled: a stream at its `max_in_flight` has room.
    pub settled: Notify,
    /// A closing stream handed deliveries back: a waiting stream takes them.
    pub handed_back: Notify,
}

/// One held delivery and the stream it was sent on (none once that stream closed).
struct Entry {
    delivery: Delivery,
    /// The trace context it travels in, looked up once when it was first handed out.
    traceparent: Option<String>,
    since: Instant,
    lease_until: Instant,
    stream: Option<u64>,
    /// The stream that held it last, once that stream closed: a client resuming that stream
    /// with `Last-Event-ID` keeps what it had read.
    was: Option<u64>,
}

/// Where a stream resumes (from `Last-Event-ID`): the stream that sent the client's last event
/// and that event's number. The client has read what that stream sent up to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    pub stream: u64,
    pub seq: u64,
}

impl Held {
    /// Forgets deliveries whose lease ended more than `grace` ago.
    fn sweep(&mut self, now: Instant, grace: Duration) {
        let Held { by_seq, seq_of, .. } = self;
        by_seq.retain(|_, e| {
            let keep = e.lease_until + grace > now;
            if !keep {
                seq_of.remove(&e.delivery.envelope.id);
            }
            keep
        });
        self.swept = Some(now);
    }

    /// [`Held::sweep`], unless it ran less than [`SWEEP_EVERY`] ago: what a sweep forgets is
    /// never handed out or counted anyway (its lease ended), and a sweep reads every entry.
    fn sweep_now_and_then(&mut self, now: Instant, grace: Duration) {
        if self.swept.is_none_or(|at| now >= at + SWEEP_EVERY) {
            self.sweep(now, grace);
        }
    }

    /// The entry of `message_id`, unless a sweep at `now` would forget it (so that whether a
    /// late settle finds it does not depend on when the last sweep ran).
    fn entry_mut(&mut self, message_id: &str, now: Instant, grace: Duration) -> Option<&mut Entry> {
        let entry = self.by_seq.get_mut(self.seq_of.get(message_id)?)?;
        (entry.lease_until + grace > now).then_some(entry)
    }
}

/// How often holding a delivery also sweeps its inbox's ended leases.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Held {
    by_seq: BTreeMap<u64, Entry>,
    seq_of: HashMap<String, u64>,
    /// When the last sweep ran.
    swept: Option<Instant>,
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
            wakers: Mutex::default(),
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

    /// Opens a stream of `agent`'s inbox: its number, unique for the server's run, and what
    /// wakes it when a held delivery of the inbox is settled or handed back (create the
    /// `notified()` before looking). [`Inboxes::release`] closes it.
    pub fn open_stream(&self, agent: &str) -> (u64, Arc<StreamWakers>) {
        let mut wakers = self.wakers.lock().expect("inbox wakers lock");
        let (streams, notify) = wakers.entry(agent.to_owned()).or_default();
        *streams += 1;
        (
            self.next_stream.fetch_add(1, Ordering::Relaxed),
            notify.clone(),
        )
    }

    /// Wakes the streams of `agent`'s inbox that wait on what `which` picks.
    fn wake(&self, agent: &str, which: fn(&StreamWakers) -> &Notify) {
        let wakers = self.wakers.lock().expect("inbox wakers lock");
        if let Some((_, notify)) = wakers.get(agent) {
            which(notify).notify_waiters();
        }
    }

    /// Keeps a new delivery for `agent`'s inbox, sent on `stream` with `traceparent` (replacing
    /// an older delivery of the same message); returns its sequence number.
    pub fn hold(
        &self,
        agent: &str,
        stream: u64,
        delivery: Delivery,
        traceparent: Option<String>,
    ) -> u64 {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let held = agents.entry(agent.to_owned()).or_default();
        let now = Instant::now();
        held.sweep_now_and_then(now, self.ack_wait_of(agent));
        let seq = self.last_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let id = delivery.envelope.id.clone();
        if let Some(old) = held.seq_of.insert(id, seq) {
            held.by_seq.remove(&old);
        }
        held.by_seq.insert(
            seq,
            Entry {
                delivery,
                traceparent,
                since: now,
                lease_until: now + self.ack_wait_of(agent),
                stream: Some(stream),
                was: None,
            },
        );
        seq
    }

    /// Takes for `stream` the first held delivery of `agent` that no open stream holds: its
    /// sequence number, the delivery and its trace context. A stream resumed from `resumed`
    /// first takes back, without sending them again, the deliveries its client had read (those
    /// the resumed stream held, up to the client's last event); any other is taken whatever its
    /// number.
    pub fn claim(
        &self,
        agent: &str,
        stream: u64,
        resumed: Option<Resume>,
    ) -> Option<(u64, Delivery, Option<String>)> {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let held = agents.get_mut(agent)?;
        let now = Instant::now();
        let read_before =
            |seq: u64, e: &Entry| resumed.is_some_and(|r| e.was == Some(r.stream) && seq <= r.seq);
        for (&seq, entry) in held.by_seq.iter_mut() {
            if entry.stream.is_some() || entry.lease_until <= now {
                continue;
            }
            entry.stream = Some(stream);
            if !read_before(seq, entry) {
                return Some((seq, entry.delivery.clone(), entry.traceparent.clone()));
            }
        }
        None
    }

    /// When the first lease of what `stream` holds ends (then it no longer counts against the
    /// stream's `max_in_flight`, and the store delivers it again).
    pub fn next_lease_end(&self, agent: &str, stream: u64) -> Option<Instant> {
        let agents = self.agents.lock().expect("inboxes lock");
        let now = Instant::now();
        (agents.get(agent)?.by_seq.values())
            .filter(|e| e.stream == Some(stream) && e.lease_until > now)
            .map(|e| e.lease_until)
            .min()
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

    /// Closes `stream` of `agent`'s inbox and hands back what it held and did not settle:
    /// other streams of the inbox take it. True when it was the inbox's last open stream on
    /// this server and it held something: then [`Inboxes::orphans`], a moment later, gives what
    /// no stream took back to the store, for the streams of other servers.
    pub fn release(&self, agent: &str, stream: u64) -> bool {
        let last = {
            let mut wakers = self.wakers.lock().expect("inbox wakers lock");
            match wakers.get_mut(agent) {
                Some((streams, _)) => {
                    *streams -= 1;
                    let last = *streams == 0;
                    if last {
                        wakers.remove(agent);
                    }
                    last
                }
                None => true,
            }
        };
        let mut agents = self.agents.lock().expect("inboxes lock");
        let Some(held) = agents.get_mut(agent) else {
            return false;
        };
        held.sweep(Instant::now(), self.ack_wait_of(agent));
        let mut any = false;
        for entry in held.by_seq.values_mut() {
            if entry.stream == Some(stream) {
                entry.stream = None;
                entry.was = Some(stream);
                any = true;
            }
        }
        if held.by_seq.is_empty() {
            agents.remove(agent);
        }
        drop(agents);
        if any {
            self.wake(agent, |w| &w.handed_back);
        }
        last && any
    }

    /// When `agent`'s inbox has no open stream on this server, forgets and returns the
    /// deliveries it holds for no stream (to be given back to the store); else nothing, as an
    /// open stream takes them itself.
    pub fn orphans(&self, agent: &str) -> Vec<Delivery> {
        let open = self.wakers.lock().expect("inbox wakers lock");
        if open.contains_key(agent) {
            return Vec::new();
        }
        let mut agents = self.agents.lock().expect("inboxes lock");
        drop(open);
        let Some(held) = agents.get_mut(agent) else {
            return Vec::new();
        };
        let now = Instant::now();
        let Held { by_seq, seq_of, .. } = held;
        let mut out = Vec::new();
        by_seq.retain(|_, e| {
            let orphan = e.stream.is_none() && e.lease_until > now;
            if orphan {
                seq_of.remove(&e.delivery.envelope.id);
                out.push(e.delivery.clone());
            }
            !orphan
        });
        if by_seq.is_empty() {
            agents.remove(agent);
        }
        out
    }

    /// The held delivery of `message_id` for `agent`, how long it has been held and its trace
    /// context.
    pub fn get(
        &self,
        agent: &str,
        message_id: &str,
    ) -> Option<(Delivery, Duration, Option<String>)> {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let grace = self.ack_wait_of(agent);
        let entry = agents
            .get_mut(agent)?
            .entry_mut(message_id, Instant::now(), grace)?;
        Some((
            entry.delivery.clone(),
            entry.since.elapsed(),
            entry.traceparent.clone(),
        ))
    }

    /// Starts the lease of the held delivery of `message_id` again (after `in-progress`).
    pub fn renew(&self, agent: &str, message_id: &str) {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let (now, wait) = (Instant::now(), self.ack_wait_of(agent));
        if let Some(entry) = agents
            .get_mut(agent)
            .and_then(|held| held.entry_mut(message_id, now, wait))
        {
            entry.lease_until = now + wait;
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
        self.wake(agent, |w| &w.settled);
    }

    /// The SSE event id of delivery `seq` sent on `stream`: `<server run>-<stream>-<seq>`.
    pub fn event_id(&self, stream: u64, seq: u64) -> String {
        format!("{}-{stream}-{seq}", self.run)
    }

    /// Where a client resumes from the event id it read last; none for an id of another server
    /// run (or of another form), or none at all.
    pub fn resume_after(&self, last_event_id: Option<&str>) -> Option<Resume> {
        let rest = last_event_id?
            .strip_prefix(self.run.as_str())?
            .strip_prefix('-')?;
        let (stream, seq) = rest.split_once('-')?;
        Some(Resume {
            stream: stream.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chorus_bus::Envelope;
    use std::sync::Arc;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn delivery(id: &str, token: &str) -> Delivery {
        Delivery {
            envelope: Arc::new(Envelope::new(id, vec!["a".into()], vec![])),
            queue: "a".into(),
            attempt: 1,
            token: token.into(),
        }
    }

    #[test]
    fn a_stream_resumed_keeps_what_its_client_read_and_replaces_redeliveries() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (first, _) = inboxes.open_stream("a");
        let s1 = inboxes.hold("a", first, delivery("m1", "t1"), Some(TP.into()));
        let s2 = inboxes.hold("a", first, delivery("m2", "t2"), None);
        inboxes.release("a", first);
        // Without Last-Event-ID, everything handed back comes again, with its trace context.
        let (stream, _) = inboxes.open_stream("a");
        let (seq, _, traceparent) = inboxes.claim("a", stream, None).unwrap();
        assert_eq!((seq, traceparent.as_deref()), (s1, Some(TP)));
        assert_eq!(inboxes.claim("a", stream, None).unwrap().0, s2);
        assert!(inboxes.claim("a", stream, None).is_none());
        inboxes.hold("a", stream, delivery("m1", "t3"), None);
        assert_eq!(inboxes.in_flight("a", stream), 2);
        let (d, _, traceparent) = inboxes.get("a", "m1").unwrap();
        assert_eq!((d.token.as_str(), traceparent), ("t3", None));
        inboxes.settle("a", &delivery("m1", "t1"));
        assert!(
            inboxes.get("a", "m1").is_some(),
            "a stale settle keeps the newer delivery"
        );
        inboxes.settle("a", &delivery("m1", "t3"));
        assert!(inboxes.get("a", "m1").is_none());
        // Resumed after m2's event: m2 is kept for the new stream, not sent again.
        let s4 = inboxes.hold("a", stream, delivery("m4", "t4"), None);
        inboxes.release("a", stream);
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(stream, s2)));
        assert_eq!(resumed, Some(Resume { stream, seq: s2 }));
        let (again, _) = inboxes.open_stream("a");
        assert_eq!(inboxes.claim("a", again, resumed).unwrap().0, s4);
        assert!(inboxes.claim("a", again, resumed).is_none());
        assert_eq!(inboxes.in_flight("a", again), 2, "m2 kept, m4 sent");
        for other in [
            Some("otherrun-1-5"),
            Some(&*format!("{}-5", inboxes.run)),
            None,
        ] {
            assert_eq!(inboxes.resume_after(other), None, "{other:?}");
        }
    }

    #[test]
    fn a_resumed_stream_takes_what_other_streams_hand_back_whatever_its_number() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let ((a, _), (b, _)) = (inboxes.open_stream("pool"), inboxes.open_stream("pool"));
        let early = inboxes.hold("pool", a, delivery("early", "t1"), None);
        let mine = inboxes.hold("pool", b, delivery("mine", "t2"), None);
        inboxes.release("pool", b);
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(b, mine)));
        let (again, _) = inboxes.open_stream("pool");
        assert!(inboxes.claim("pool", again, resumed).is_none());
        assert_eq!(inboxes.in_flight("pool", again), 1, "mine is held again");
        inboxes.release("pool", a);
        let (seq, d, _) = inboxes.claim("pool", again, resumed).expect("handed back");
        assert_eq!((seq, d.envelope.id.as_str()), (early, "early"));
        assert!(
            early < mine,
            "numbered before the resumed stream's last event"
        );
    }

    #[test]
    fn a_delivery_past_its_lease_and_grace_is_gone_whenever_the_last_sweep_ran() {
        let wait = Duration::from_millis(20);
        let inboxes = Inboxes::new(wait);
        inboxes.hold("a", 1, delivery("m1", "t1"), None);
        std::thread::sleep(wait * 3);
        // Held within a second of the first: no sweep ran, yet m1 is not found nor renewed.
        inboxes.hold("a", 1, delivery("m2", "t2"), None);
        assert!(inboxes.get("a", "m1").is_none());
        inboxes.renew("a", "m1");
        assert!(inboxes.get("a", "m1").is_none());
        assert!(inboxes.get("a", "m2").is_some());
    }

    #[tokio::test]
    async fn a_held_delivery_belongs_to_one_stream_until_that_stream_closes() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (a, (b, wakes_b)) = (inboxes.open_stream("pool").0, inboxes.open_stream("pool"));
        inboxes.hold("pool", a, delivery("m1", "t1"), None);
        let (handed_b, room_b) = (wakes_b.handed_back.notified(), wakes_b.settled.notified());
        tokio::pin!(handed_b, room_b);
        handed_b.as_mut().enable();
        room_b.as_mut().enable();
        assert!(
            inboxes.claim("pool", b, None).is_none(),
            "held by a, not offered to b"
        );
        assert_eq!(inboxes.in_flight("pool", a), 1);
        assert_eq!(inboxes.in_flight("pool", b), 0);
        inboxes.release("pool", a);
        let wait = Duration::from_millis(50);
        assert!(
            tokio::time::timeout(wait, handed_b).await.is_ok(),
            "b, waiting for deliveries, is woken by the hand-back"
        );
        assert!(
            tokio::time::timeout(wait, room_b).await.is_err(),
            "a hand-back settles nothing"
        );
        let (_, d, _) = inboxes.claim("pool", b, None).expect("handed back to b");
        assert_eq!(d.envelope.id, "m1");
        assert!(inboxes.claim("pool", a, None).is_none(), "b holds it now");
        assert_eq!(inboxes.in_flight("pool", b), 1);
    }

    #[tokio::test]
    async fn a_settle_wakes_the_streams_of_its_own_inbox_waiting_for_room_only() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (a, wakes_a) = inboxes.open_stream("a");
        let (_, wakes_b) = inboxes.open_stream("b");
        inboxes.hold("a", a, delivery("m1", "t1"), None);
        let (room_a, room_b) = (wakes_a.settled.notified(), wakes_b.settled.notified());
        let handed_a = wakes_a.handed_back.notified();
        tokio::pin!(room_a, room_b, handed_a);
        room_a.as_mut().enable();
        room_b.as_mut().enable();
        handed_a.as_mut().enable();
        inboxes.settle("a", &delivery("m1", "t1"));
        let wait = Duration::from_millis(50);
        assert!(
            tokio::time::timeout(wait, room_a).await.is_ok(),
            "a is woken"
        );
        assert!(
            tokio::time::timeout(wait, room_b).await.is_err(),
            "b sleeps on"
        );
        assert!(
            tokio::time::timeout(wait, handed_a).await.is_err(),
            "a settle hands nothing back: a stream waiting for deliveries sleeps on"
        );
        inboxes.release("a", a);
        assert!(
            inboxes.wakers.lock().unwrap().get("a").is_none(),
            "forgotten with its last stream"
        );
    }
}
