//! Agents for chorus: model clients, tools, human confirmation, and flows that run agents over
//! the bus, all speaking chorus messages and seed-003 handoffs.
//!
//! The seams: a [`ModelClient`] turns a [`model::ModelRequest`] into a [`model::ModelReply`]
//! (an OpenAI-compatible client and a Harmony client are in [`model`]); a [`Tool`] turns
//! validated arguments into a seed-000 tool outcome, behind a [`tools::ToolRegistry`]; a
//! [`Confirmations`] store holds the calls that wait for a person; a [`FlowAgent`] takes an item
//! and answers with items; a [`Flow`] runs the agents a TOML file declares.
//!
//! ```
//! use std::sync::Arc;
//!
//! use chorus_agent::tools::{FunctionTool, ToolOutput, ToolRegistry};
//! use chorus_core::ToolCall;
//! use serde_json::json;
//!
//! /// The arguments the model must send; their JSON Schema is what the model is shown.
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Forecast {
//!     city: String,
//! }
//!
//! let mut registry = ToolRegistry::new();
//! registry.register(Arc::new(FunctionTool::new("forecast", "Weather", |a: Forecast| async move {
//!     ToolOutput::success(json!({"status": "success", "city": a.city, "sky": "rain"}))
//! })))?;
//! let runtime = tokio::runtime::Runtime::new()?;
//!
//! let call = ToolCall::function("call_1", "forecast", &json!({"city": "Paris"}));
//! let result = runtime.block_on(registry.invoke("planner", &call, None));
//! assert!(!result.is_error());
//! // Arguments that do not fit the schema come back as an error result the model can repair.
//! let wrong = ToolCall::function("call_2", "forecast", &json!({"town": "Paris"}));
//! assert!(runtime.block_on(registry.invoke("planner", &wrong, None)).is_error());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each module is a namespace with private parts: [`agents`] (rule and LLM agents, handoff
//! packets), [`confirm`] (confirmation stores), [`cost`] (model prices), [`flow`] (flow files
//! and their runner), [`model`], [`structured`] (structured requests of seed 004), [`tools`].

pub mod agents;
pub mod confirm;
pub mod cost;
pub mod flow;
pub mod journal;
pub mod model;
pub mod sse;
pub mod structured;
pub mod tools;

pub use agents::FlowAgent;
pub use confirm::Confirmations;
pub use flow::Flow;
pub use model::ModelClient;
pub use tools::Tool;
