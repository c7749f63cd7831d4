//! Counters and gauges of the server, rendered in the Prometheus / OpenMetrics text format.

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use std::collections::BTreeSet;
use std::sync::Mutex;

use chorus_bus::{Bus, BusResult};

type Labels = Vec<(&'static str, String)>;

/// The server's metrics.
pub struct Metrics {
    registry: Registry,
    /// Messages accepted and stored (duplicates not counted).
    pub published: Counter,
    /// Re-publications of an id already stored (nothing stored again).
    pub duplicates: Counter,
    /// Deliveries handed to agents over SSE (redeliveries counted again).
    pub delivered: Counter,
    /// Deliveries acknowledged.
    pub acked: Counter,
    /// Deliveries negatively acknowledged.
    pub nacked: Counter,
    /// Documents refused as invalid on publish and kept as dead letters.
    pub dead_lettered: Counter,
    /// Dead letters in the store, read at each scrape.
    pub dead_letters: Gauge,
    /// Seconds from a publish request's body being read to the message being durable.
    pub publish_seconds: Histogram,
    /// Seconds from a delivery being sent to an agent to its ack.
    pub ack_seconds: Histogram,
    /// Messages stored for an inbox and not yet acknowledged, per inbox, read at each scrape.
    backlog: Family<Labels, Gauge>,
    /// Delivery history events dropped because the store was too far behind.
    pub history_dropped: Counter,
    /// What the pruner removed, per kind.
    pruned: Family<Labels, Counter>,
    /// The inboxes messages were stored for through this server.
    inboxes: Mutex<BTreeSet<String>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("chorus");
        let counter = |registry: &mut Registry, name: &str, help: &str| {
            let c = Counter::default();
            registry.register(name, help, c.clone());
            c
        };
        let published = counter(&mut registry, "published", "Messages accepted and stored");
        let duplicates = counter(
            &mut registry,
            "duplicates",
            "Re-publications of a stored id",
        );
        let delivered = counter(&mut registry, "delivered", "Deliveries sent to agents");
        let acked = counter(&mut registry, "acked", "Deliveries acknowledged");
        let nacked = counter(
            &mut registry,
            "nacked",
            "Deliveries negatively acknowledged",
        );
        let dead_lettered = counter(
            &mut registry,
            "dead_lettered",
            "Documents refused on publish and kept as dead letters",
        );
        let history_dropped = counter(
            &mut registry,
            "history_dropped",
            "Delivery history events not written because the store was too far behind",
        );
        let dead_letters = Gauge::default();
        registry.register(
            "dead_letters",
            "Dead letters in the store",
            dead_letters.clone(),
        );
        let histogram = |registry: &mut Registry, name: &str, help: &str, first: f64| {
            let h = Histogram::new(exponential_buckets(first, 2.0, 16));
            registry.register(name, help, h.clone());
            h
        };
        let publish_seconds = histogram(
            &mut registry,
            "publish_seconds",
            "Seconds to validate and durably store a published message",
            0.000_1,
        );
        let ack_seconds = histogram(
            &mut registry,
            "ack_seconds",
            "Seconds from a delivery being sent to an agent to its ack",
            0.001,
        );
        let backlog = Family::<Labels, Gauge>::default();
        registry.register(
            "inbox_backlog",
            "Messages stored for an inbox and not yet acknowledged (waiting, delayed or being handled)",
            backlog.clone(),
        );
        let pruned = Family::<Labels, Counter>::default();
        registry.register(
            "pruned",
            "Entries removed by retention, per kind (messages, dead_letters, blobs, traces, confirmations, records)",
            pruned.clone(),
        );
        Metrics {
            registry,
            published,
            duplicates,
            delivered,
            acked,
            nacked,
            dead_lettered,
            history_dropped,
            dead_letters,
            publish_seconds,
            ack_seconds,
            backlog,
            pruned,
            inboxes: Mutex::default(),
        }
    }
}

impl Metrics {
    /// Notes that messages were stored for `inbox`: its backlog is reported from then on.
    pub fn saw_inbox(&self, inbox: &str) {
        let mut inboxes = self.inboxes.lock().unwrap_or_else(|e| e.into_inner());
        if !inboxes.contains(inbox) {
            inboxes.insert(inbox.to_owned());
        }
    }

    /// Sets each backlog gauge to the store's depth of that inbox: the inboxes seen and those
    /// of the bus's bindings.
    pub async fn refresh_backlog(&self, bus: &dyn Bus) -> BusResult<()> {
        let mut inboxes = self
            .inboxes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        inboxes.extend(bus.bindings().await?.into_iter().map(|b| b.queue));
        for inbox in inboxes {
            let depth = bus.depth(&inbox).await?;
            self.backlog
                .get_or_create(&vec![("inbox", inbox)])
                .set(i64::try_from(depth).unwrap_or(i64::MAX));
        }
        Ok(())
    }

    /// Counts `n` entries of `kind` removed by retention (every kind shows, 0 until some go).
    pub fn count_pruned(&self, kind: &'static str, n: u64) {
        self.pruned
            .get_or_create(&vec![("kind", kind.to_owned())])
            .inc_by(n);
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
