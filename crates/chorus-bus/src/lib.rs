//! Hub, pipelines, routing and durable delivery of chorus messages and handoffs.
//!
//! One [`Bus`] trait with the same guarantees on every backend: [`memory`] (in-process),
//! [`sqlite`] (the embedded durable default), `nats` (JetStream, feature `nats`) and `redis`
//! (Streams, feature `redis`). [`hub`] and [`pipeline`] orchestrate [`Agent`]s in process.

pub mod agent;
pub mod bench;
mod binding_cache;
pub mod bus;
pub mod config;
pub mod content;
pub mod core;
pub mod delivery;
pub mod envelope;
pub mod error;
pub mod fair;
pub mod hub;
pub mod memory;
#[cfg(feature = "nats")]
pub mod nats;
pub mod open;
pub mod peek;
pub mod pipeline;
#[cfg(feature = "redis")]
pub mod redis;
pub mod retention;
pub mod routing;
pub mod sqlite;
#[cfg(any(feature = "nats", feature = "redis"))]
mod stored;
mod validator;

pub use agent::{Agent, AgentError};
pub use bus::{Bus, handle_once};
pub use bytes::Bytes;
pub use config::{BusConfig, DEFAULT_DEDUPE_WINDOW, QueueSettings, Validator, now_ms};
pub use content::ContentDigest;
pub use core::CoreValidator;
pub use delivery::{
    DeadLetter, DeadReason, Delivery, Effect, EffectRecord, Handled, LogEntry, Receipt,
    TrackSummary,
};
pub use envelope::{Envelope, Priority, Rank};
pub use error::{BusError, BusResult};
pub use memory::MemoryBus;
#[cfg(feature = "nats")]
pub use nats::NatsBus;
pub use open::{DEFAULT_NAMESPACE, ServerStore, StoreSpec};
pub use peek::{PEEK_LIMIT, Queued, QueuedState};
#[cfg(feature = "redis")]
pub use redis::RedisBus;
pub use retention::{Page, PruneBefore, Pruned};
pub use routing::{Binding, Filter, RoutingRule};
pub use sqlite::SqliteBus;
