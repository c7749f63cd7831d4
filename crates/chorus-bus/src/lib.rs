//! Hub, pipelines, routing and durable delivery of chorus messages and handoffs.
//!
//! One [`Bus`] trait with the same guarantees on every [`Backend`] (the storage primitives a
//! store implements; the guarantees are written once, above them): [`MemoryBus`] (in-process),
//! [`SqliteBus`] (the embedded durable default), `NatsBus` (JetStream, feature `nats`) and
//! `RedisBus` (Streams, feature `redis`), `PostgresBus` (feature `postgres`); [`StoreAddress`] opens one from a URL. A published
//! document is validated, routed to its recipients' queues and delivered at least once until
//! acknowledged; [`hub`] and [`pipeline`] orchestrate [`Agent`]s in process.
//!
//! ```
//! use std::time::Duration;
//! use chorus_bus::{Backend, Bus, BusConfig, MemoryBus};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let bus = MemoryBus::new(BusConfig::default());
//! let message = r#"{"id": "m-1", "role": "user", "name": "customer", "recipient": "support",
//!     "content": "Is the router up?"}"#;
//! let receipt = bus.publish(message.as_bytes().to_vec()).await?;
//! assert_eq!(receipt.queues, ["support"]);
//! let deliveries = bus.receive("support", 10, Duration::from_secs(1)).await?;
//! assert_eq!(deliveries[0].envelope.id, "m-1");
//! bus.ack(&deliveries[0]).await?;
//! # Ok::<(), chorus_bus::BusError>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The namespaces: [`hub`] and [`pipeline`] (in-process orchestration), [`bench`](mod@bench) (the load
//! behind `chorus bench` and the bus benches) and, with feature `redis`, `redis` (its
//! persistence check).

mod agent;
mod backend;
pub mod bench;
mod bench_report;
mod binding_cache;
mod bus;
mod check;
mod config;
mod content;
#[doc(hidden)]
pub mod crash;
mod delivery;
mod documents;
mod envelope;
mod error;
mod fair;
pub mod hub;
mod memory;
#[cfg(feature = "nats")]
mod nats;
mod open;
mod peek;
pub mod pipeline;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
mod retention;
mod routing;
mod sqlite;
#[cfg(any(feature = "nats", feature = "redis"))]
mod stored;
mod wakers;

pub use agent::{Agent, AgentError};
pub use backend::Backend;
pub use bus::{Bus, handle_once};
pub use bytes::Bytes;
pub use check::PublishCheck;
pub use config::{BusConfig, DEFAULT_DEDUPE_WINDOW, QueueSettings, now_ms};
pub use content::ContentDigest;
pub use delivery::{
    DeadLetter, DeadReason, Delivery, Effect, EffectRecord, Handled, LogEntry, Logged, Receipt,
    TrackSummary,
};
pub use documents::CoreValidator;
pub use envelope::{Envelope, Priority};
pub use error::{BusError, BusResult};
pub use memory::MemoryBus;
#[cfg(feature = "nats")]
pub use nats::NatsBus;
pub use open::{DEFAULT_NAMESPACE, RemoteStore, StoreAddress};
pub use peek::{PEEK_LIMIT, Queued, QueuedState};
#[cfg(feature = "postgres")]
pub use postgres::{DEFAULT_MAX_CONNECTIONS, PostgresBus, SCHEMA_VERSION};
#[cfg(feature = "redis")]
pub use redis::RedisBus;
pub use retention::{Page, PruneBefore, Pruned};
pub use routing::{Binding, Filter, RoutingRule};
pub use sqlite::SqliteBus;
