//! The chorus hub as a service: an HTTP API for agents in any language — publish, an inbox as
//! Server-Sent Events, ack and nack — with bearer-token auth, metrics and an OpenAPI document.

pub mod api;
pub mod auth;
pub mod blobs;
pub mod config;
mod connections;
pub mod error;
pub mod ids;
pub mod inbox;
pub mod metrics;
pub mod observe;
pub mod policy;
mod pruner;
mod quota;
pub mod rate;
pub mod redact;
pub mod retention;
pub mod routes;
pub mod server;
pub mod state;
pub mod telemetry;
pub mod tls;
pub mod ui;

pub use auth::{Caller, hash_token};
pub use config::{AgentEntry, ServerConfig};
pub use error::ApiError;
pub use server::{Server, SideStores, Store, bind, shutdown_signal};
