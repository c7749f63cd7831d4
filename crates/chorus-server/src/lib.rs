//! The chorus hub as a service: an HTTP API for agents in any language — publish, an inbox as
//! Server-Sent Events, ack and nack — with bearer-token auth, metrics and an OpenAPI document.
//!
//! A program opens a [`Store`], builds a [`Server`] from a [`ServerConfig`] and serves it on a
//! listener from [`bind`] (or a [`tls::TlsListener`]) until a shutdown future resolves:
//!
//! ```
//! use chorus_server::{AgentEntry, Server, ServerConfig, Store, bind, hash_token};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let mut config = ServerConfig::default();
//! let alice = AgentEntry::with_token_hash(hash_token("alice's token"));
//! config.agents.insert("alice".into(), alice);
//! let bus = Store::memory().open(&config).await?;
//! let server = Server::new(bus, &config);
//! assert!(server.openapi().paths.paths.contains_key("/v1/messages"));
//! let (listener, _address) = bind("127.0.0.1:0").await?;
//! // `chorus serve` passes `chorus_server::shutdown_signal()` (Ctrl-C or SIGTERM).
//! server.serve(listener, async {}).await?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The namespaces: [`config`] (the configuration file's parts), [`telemetry`] (OpenTelemetry
//! export and the trace contexts kept beside messages) and [`tls`] (HTTPS listening).

mod a2a;
mod api;
mod auth;
mod blobs;
mod body_edge;
pub mod config;
mod connections;
mod error;
mod history;
mod ids;
mod inbox;
mod layers;
mod live;
#[cfg(feature = "mcp")]
mod mcp;
mod metrics;
mod observe;
mod policy;
mod pools;
mod pruner;
mod quota;
mod rate;
mod redact;
mod retention;
mod routes;
mod server;
mod state;
mod streams;
pub mod telemetry;
pub mod tls;
mod ui;
mod write_health;

pub use a2a::HANDOFF_EXTENSION;
pub use auth::hash_token;
pub use config::{AgentEntry, ServerConfig};
pub use server::{Server, SideStores, Store, bind, shutdown_signal};
pub use ui::TRACE_URL_VAR;
