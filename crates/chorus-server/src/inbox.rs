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

/// Held deliveries of every inbox; event ids are `<server run>-<stream>-<sequence>`.
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
    wakers: Mutex<HashMap<String, Open>>,
}

/// The open streams of one inbox.
#[derive(Default)]
struct Open {
    streams: usize,
    wakers: Arc<StreamWakers>,
    /// The open streams resumed with `Last-Event-ID`, and where: what their clients read is
    /// kept for them, not taken by the inbox's other streams.
    resumed: Vec<(u64, Resume)>,
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

/// One held delivery, numbered by when it was last sent, and the stream that holds it.
struct Entry {
    delivery: Delivery,
    /// The trace context it travels in, looked up once when it was first handed out.
    traceparent: Option<String>,
    since: Instant,
    lease_until: Instant,
    /// The stream that holds it (none once that stream closed).
    stream: Option<u64>,
    /// The stream it was last sent on, under its number.
    sent_on: u64,
    /// The stream resumed with `Last-Event-ID` that took it back without sending it (its
    /// client had read it): a client resuming that stream in turn has it too.
    kept_by: Option<u64>,
}

impl Entry {
    /// Whether the client resuming at `r` has read this delivery, numbered `seq`.
    fn read_by(&self, seq: u64, r: Resume) -> bool {
        self.kept_by == Some(r.stream) || (self.sent_on == r.stream && seq <= r.seq)
    }
}

/// A held delivery, as [`Inboxes::get`] finds it for a settle.
#[derive(Debug)]
pub struct HeldCopy {
    /// The delivery.
    pub delivery: Delivery,
    /// How long it has been held.
    pub held_for: Duration,
    /// The trace context it travels in.
    pub traceparent: Option<String>,
    /// The stream it was last sent on.
    pub stream: u64,
    /// When its lease ends (later after an `in-progress`).
    pub lease_until: Instant,
}

/// What [`Inboxes::claim`] did for a stream.
#[derive(Debug)]
pub enum Claim {
    /// It took a held delivery for the stream: its new number, the delivery, its trace context
    /// and the stream it was last sent on (this one, for what a resumed stream's client had
    /// not read yet; another, for a hand-over).
    Taken(u64, Delivery, Option<String>, u64),
    /// Nothing to take, or no room: how many deliveries the stream holds unsettled.
    Holds(usize),
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
    /// How long a delivery of `inbox` is leased.
    pub fn ack_wait_of(&self, inbox: &str) -> Duration {
        self.ack_waits.get(inbox).copied().unwrap_or(self.ack_wait)
    }

    /// Opens a stream of `agent`'s inbox, resumed at `resumed` (from `Last-Event-ID`): its
    /// number, unique for the server's run, and what wakes it when a held delivery of the inbox
    /// is settled or handed back (create the `notified()` before looking).
    /// [`Inboxes::release`] closes it.
    pub fn open_stream(&self, agent: &str, resumed: Option<Resume>) -> (u64, Arc<StreamWakers>) {
        let mut wakers = self.wakers.lock().expect("inbox wakers lock");
        let open = wakers.entry(agent.to_owned()).or_default();
        open.streams += 1;
        let stream = self.next_stream.fetch_add(1, Ordering::Relaxed);
        if let Some(r) = resumed {
            open.resumed.push((stream, r));
        }
        (stream, open.wakers.clone())
    }

    /// Wakes the streams of `agent`'s inbox that wait on what `which` picks.
    fn wake(&self, agent: &str, which: fn(&StreamWakers) -> &Notify) {
        let wakers = self.wakers.lock().expect("inbox wakers lock");
        if let Some(open) = wakers.get(agent) {
            which(&open.wakers).notify_waiters();
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
                sent_on: stream,
                kept_by: None,
            },
        );
        seq
    }

    /// Takes for `stream`, while it holds fewer than `max_in_flight`, the first held delivery of
    /// `agent` that no open stream holds: its new number (it is sent again, and a stream's
    /// numbers rise in the order it sends), the delivery and its trace context. Else how many
    /// deliveries `stream` holds unsettled (as [`Inboxes::in_flight`] counts them).
    ///
    /// A stream resumed at `resumed` first takes back, without sending them, the deliveries its
    /// client had read (whatever its room: the client holds them), even from the old stream
    /// while the server has not yet seen it close; those are kept for it and never taken by the
    /// inbox's other streams while it is open. Any other is taken whatever its
    /// number.
    pub fn claim(
        &self,
        agent: &str,
        stream: u64,
        resumed: Option<Resume>,
        max_in_flight: usize,
    ) -> Claim {
        let others: Vec<Resume> = {
            let wakers = self.wakers.lock().expect("inbox wakers lock");
            let open = wakers
                .get(agent)
                .map(|o| o.resumed.as_slice())
                .unwrap_or(&[]);
            (open.iter())
                .filter(|(s, _)| *s != stream)
                .map(|(_, r)| *r)
                .collect()
        };
        let mut agents = self.agents.lock().expect("inboxes lock");
        let Some(held) = agents.get_mut(agent) else {
            return Claim::Holds(0);
        };
        let now = Instant::now();
        let (mut holds, mut first) = (0, None);
        for (&seq, entry) in held.by_seq.iter_mut() {
            if entry.lease_until <= now {
                continue;
            }
            if entry.stream == Some(stream) {
                holds += 1;
            } else if resumed.is_some_and(|r| entry.read_by(seq, r)) {
                // Also from a stream still open here: its client came back on this one, and
                // the server has not yet seen the old connection close.
                entry.stream = Some(stream);
                entry.kept_by = Some(stream);
                holds += 1;
            } else if entry.stream.is_some() {
                // Another stream's.
            } else if first.is_none() && !others.iter().any(|&r| entry.read_by(seq, r)) {
                first = Some(seq);
            }
        }
        let entry = match first {
            Some(first) if holds < max_in_flight => held.by_seq.remove(&first),
            _ => None,
        };
        let Some(mut entry) = entry else {
            return Claim::Holds(holds);
        };
        let seq = self.last_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let from = entry.sent_on;
        (entry.stream, entry.sent_on, entry.kept_by) = (Some(stream), stream, None);
        held.seq_of.insert(entry.delivery.envelope.id.clone(), seq);
        let taken = Claim::Taken(seq, entry.delivery.clone(), entry.traceparent.clone(), from);
        held.by_seq.insert(seq, entry);
        taken
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
                Some(open) => {
                    open.streams -= 1;
                    open.resumed.retain(|(s, _)| *s != stream);
                    let last = open.streams == 0;
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
    pub fn orphans(&self, agent: &str) -> Vec<(Delivery, u64)> {
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
                out.push((e.delivery.clone(), e.sent_on));
            }
            !orphan
        });
        if by_seq.is_empty() {
            agents.remove(agent);
        }
        out
    }

    /// The held delivery of `message_id` for `agent`, with what a settle needs of it.
    pub fn get(&self, agent: &str, message_id: &str) -> Option<HeldCopy> {
        let mut agents = self.agents.lock().expect("inboxes lock");
        let grace = self.ack_wait_of(agent);
        let entry = agents
            .get_mut(agent)?
            .entry_mut(message_id, Instant::now(), grace)?;
        Some(HeldCopy {
            delivery: entry.delivery.clone(),
            held_for: entry.since.elapsed(),
            traceparent: entry.traceparent.clone(),
            stream: entry.sent_on,
            lease_until: entry.lease_until,
        })
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

    impl Claim {
        /// What was taken, if anything.
        fn taken(self) -> Option<(u64, Delivery, Option<String>)> {
            match self {
                Claim::Taken(seq, d, tp, _) => Some((seq, d, tp)),
                Claim::Holds(_) => None,
            }
        }
    }

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn delivery(id: &str, token: &str) -> Delivery {
        Delivery {
            envelope: Arc::new(Envelope::new(id, vec!["a".into()], vec![])),
            queue: "a".into(),
            attempt: 1,
            token: token.into(),
        }
    }

    /// Room enough for every test below that is not about `max_in_flight`.
    const ROOM: usize = 16;

    #[test]
    fn a_client_back_before_its_old_stream_closes_keeps_what_it_read_within_its_room() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (old, _) = inboxes.open_stream("pool", None);
        let s1 = inboxes.hold("pool", old, delivery("m1", "t1"), None);
        // The client reconnects at m1 while the server still has the old stream open.
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(old, s1)));
        let (again, _) = inboxes.open_stream("pool", resumed);
        assert!(
            matches!(inboxes.claim("pool", again, resumed, 1), Claim::Holds(1)),
            "m1 is the new stream's now, and fills its room of one"
        );
        assert_eq!(inboxes.in_flight("pool", old), 0);
        // The old stream's close then hands back nothing the client holds: another worker's
        // stream finds nothing to take.
        inboxes.release("pool", old);
        assert_eq!(inboxes.in_flight("pool", again), 1);
        let (other, _) = inboxes.open_stream("pool", None);
        assert!(matches!(
            inboxes.claim("pool", other, None, ROOM),
            Claim::Holds(0)
        ));
    }

    #[test]
    fn a_stream_resumed_keeps_what_its_client_read_and_replaces_redeliveries() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (first, _) = inboxes.open_stream("a", None);
        let s1 = inboxes.hold("a", first, delivery("m1", "t1"), Some(TP.into()));
        inboxes.hold("a", first, delivery("m2", "t2"), None);
        inboxes.release("a", first);
        // Without Last-Event-ID, everything handed back comes again, in order, with its trace
        // context, under new numbers.
        let (stream, _) = inboxes.open_stream("a", None);
        let (seq, d, traceparent) = inboxes.claim("a", stream, None, ROOM).taken().unwrap();
        assert_eq!(
            (d.envelope.id.as_str(), traceparent.as_deref()),
            ("m1", Some(TP))
        );
        assert!(seq > s1, "sent again under a new number");
        let (s2, d, _) = inboxes.claim("a", stream, None, ROOM).taken().unwrap();
        assert_eq!(d.envelope.id, "m2");
        // Nothing left to take: the claim says how many the stream holds.
        assert!(matches!(
            inboxes.claim("a", stream, None, ROOM),
            Claim::Holds(2)
        ));
        inboxes.hold("a", stream, delivery("m1", "t3"), None);
        assert_eq!(inboxes.in_flight("a", stream), 2);
        let HeldCopy {
            delivery: d,
            traceparent,
            ..
        } = inboxes.get("a", "m1").unwrap();
        assert_eq!((d.token.as_str(), traceparent), ("t3", None));
        inboxes.settle("a", &delivery("m1", "t1"));
        assert!(
            inboxes.get("a", "m1").is_some(),
            "a stale settle keeps the newer delivery"
        );
        inboxes.settle("a", &delivery("m1", "t3"));
        assert!(inboxes.get("a", "m1").is_none());
        // Resumed after m2's event: m2 is kept for the new stream, not sent again; m4, sent
        // after it, is sent again.
        inboxes.hold("a", stream, delivery("m4", "t4"), None);
        inboxes.release("a", stream);
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(stream, s2)));
        assert_eq!(resumed, Some(Resume { stream, seq: s2 }));
        let (again, _) = inboxes.open_stream("a", resumed);
        let (_, d, _) = inboxes.claim("a", again, resumed, ROOM).taken().unwrap();
        assert_eq!(d.envelope.id, "m4");
        assert!(inboxes.claim("a", again, resumed, ROOM).taken().is_none());
        assert_eq!(inboxes.in_flight("a", again), 2, "m2 kept, m4 sent");
        let other_form = format!("{}-5", inboxes.run);
        for other in [Some("otherrun-1-5"), Some(other_form.as_str()), None] {
            assert_eq!(inboxes.resume_after(other), None, "{other:?}");
        }
    }

    #[test]
    fn a_resumed_stream_takes_what_other_streams_hand_back_whatever_its_number() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (a, b) = (
            inboxes.open_stream("pool", None).0,
            inboxes.open_stream("pool", None).0,
        );
        let early = inboxes.hold("pool", a, delivery("early", "t1"), None);
        let mine = inboxes.hold("pool", b, delivery("mine", "t2"), None);
        inboxes.release("pool", b);
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(b, mine)));
        let (again, _) = inboxes.open_stream("pool", resumed);
        assert!(
            inboxes
                .claim("pool", again, resumed, ROOM)
                .taken()
                .is_none()
        );
        assert_eq!(inboxes.in_flight("pool", again), 1, "mine is held again");
        inboxes.release("pool", a);
        let (_, d, _) = inboxes
            .claim("pool", again, resumed, ROOM)
            .taken()
            .expect("handed back");
        assert_eq!(d.envelope.id, "early");
        assert!(
            early < mine,
            "numbered before the resumed stream's last event"
        );
    }

    #[test]
    fn what_a_resumed_streams_client_read_is_kept_from_the_other_streams() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (old, _) = inboxes.open_stream("pool", None);
        let s1 = inboxes.hold("pool", old, delivery("m1", "t1"), None);
        // The client comes back before the server saw its old stream close.
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(old, s1)));
        let (again, _) = inboxes.open_stream("pool", resumed);
        let (other, _) = inboxes.open_stream("pool", None);
        inboxes.release("pool", old);
        assert!(
            inboxes.claim("pool", other, None, ROOM).taken().is_none(),
            "kept for the client that read it"
        );
        assert!(
            inboxes
                .claim("pool", again, resumed, ROOM)
                .taken()
                .is_none()
        );
        assert_eq!(inboxes.in_flight("pool", again), 1);
        // Once the resumed stream closes too, anyone takes it.
        inboxes.release("pool", again);
        let (_, d, _) = inboxes
            .claim("pool", other, None, ROOM)
            .taken()
            .expect("handed back");
        assert_eq!(d.envelope.id, "m1");
    }

    #[test]
    fn a_resumed_stream_keeps_what_its_client_read_whatever_its_room_and_sends_no_more() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let ((old, _), (other, _)) = (
            inboxes.open_stream("pool", None),
            inboxes.open_stream("pool", None),
        );
        inboxes.hold("pool", old, delivery("m1", "t1"), None);
        let s2 = inboxes.hold("pool", old, delivery("m2", "t2"), None);
        inboxes.hold("pool", other, delivery("m3", "t3"), None);
        inboxes.release("pool", old);
        inboxes.release("pool", other);
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(old, s2)));
        let (again, _) = inboxes.open_stream("pool", resumed);
        assert!(
            matches!(inboxes.claim("pool", again, resumed, 1), Claim::Holds(2)),
            "m3 waits: the stream holds two of its one"
        );
        assert_eq!(inboxes.in_flight("pool", again), 2, "m1 and m2 kept");
        inboxes.settle("pool", &delivery("m1", "t1"));
        inboxes.settle("pool", &delivery("m2", "t2"));
        let (_, d, _) = inboxes
            .claim("pool", again, resumed, 1)
            .taken()
            .expect("room again");
        assert_eq!(d.envelope.id, "m3");
    }

    #[test]
    fn a_stream_numbers_what_it_sends_in_the_order_it_sends_it() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let ((a, _), (t, _)) = (
            inboxes.open_stream("pool", None),
            inboxes.open_stream("pool", None),
        );
        inboxes.hold("pool", t, delivery("m1", "t1"), None);
        let s2 = inboxes.hold("pool", a, delivery("m2", "t2"), None);
        inboxes.release("pool", t);
        // m1, numbered before m2, is sent on a after m2: under a number after m2's.
        let (s1, d, _) = inboxes.claim("pool", a, None, ROOM).taken().unwrap();
        assert_eq!(d.envelope.id, "m1");
        assert!(s1 > s2);
        inboxes.release("pool", a);
        // The client read m2 and lost m1's event: m1 is sent again, m2 is kept.
        let resumed = inboxes.resume_after(Some(&inboxes.event_id(a, s2)));
        let (b, _) = inboxes.open_stream("pool", resumed);
        let (_, d, _) = inboxes
            .claim("pool", b, resumed, ROOM)
            .taken()
            .expect("m1 again");
        assert_eq!(d.envelope.id, "m1");
        assert!(inboxes.claim("pool", b, resumed, ROOM).taken().is_none());
        assert_eq!(inboxes.in_flight("pool", b), 2);
    }

    #[test]
    fn a_client_that_comes_back_twice_keeps_what_it_read() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (a, _) = inboxes.open_stream("a", None);
        let s1 = inboxes.hold("a", a, delivery("m1", "t1"), None);
        inboxes.release("a", a);
        let at_a = inboxes.resume_after(Some(&inboxes.event_id(a, s1)));
        let (b, _) = inboxes.open_stream("a", at_a);
        assert!(inboxes.claim("a", b, at_a, ROOM).taken().is_none());
        inboxes.release("a", b);
        // b sent nothing, so the client still has a's last event id: m1 is kept.
        let (c, _) = inboxes.open_stream("a", at_a);
        assert!(inboxes.claim("a", c, at_a, ROOM).taken().is_none());
        assert_eq!(inboxes.in_flight("a", c), 1);
        // A client that got an event of c's resumes with c's id: m1 is kept too.
        let s2 = inboxes.hold("a", c, delivery("m2", "t2"), None);
        inboxes.release("a", c);
        let at_c = inboxes.resume_after(Some(&inboxes.event_id(c, s2)));
        let (d, _) = inboxes.open_stream("a", at_c);
        assert!(inboxes.claim("a", d, at_c, ROOM).taken().is_none());
        assert_eq!(inboxes.in_flight("a", d), 2);
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
        let (a, (b, wakes_b)) = (
            inboxes.open_stream("pool", None).0,
            inboxes.open_stream("pool", None),
        );
        inboxes.hold("pool", a, delivery("m1", "t1"), None);
        let (handed_b, room_b) = (wakes_b.handed_back.notified(), wakes_b.settled.notified());
        tokio::pin!(handed_b, room_b);
        handed_b.as_mut().enable();
        room_b.as_mut().enable();
        assert!(
            inboxes.claim("pool", b, None, ROOM).taken().is_none(),
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
        let (_, d, _) = inboxes
            .claim("pool", b, None, ROOM)
            .taken()
            .expect("handed back to b");
        assert_eq!(d.envelope.id, "m1");
        assert!(
            inboxes.claim("pool", a, None, ROOM).taken().is_none(),
            "b holds it now"
        );
        assert_eq!(inboxes.in_flight("pool", b), 1);
    }

    #[tokio::test]
    async fn a_settle_wakes_the_streams_of_its_own_inbox_waiting_for_room_only() {
        let inboxes = Inboxes::new(Duration::from_secs(30));
        let (a, wakes_a) = inboxes.open_stream("a", None);
        let (_, wakes_b) = inboxes.open_stream("b", None);
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
