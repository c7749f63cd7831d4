//! Model clients, tools, human confirmation, agents and flows.
//!
//! The seams: a [`model::ModelClient`] turns a [`model::ModelRequest`] into a
//! [`model::ModelReply`]; a [`tools::Tool`] turns validated arguments into a seed-000 tool
//! outcome; a [`confirm::Confirmations`] store holds the calls that wait for a person.

pub mod agents;
pub mod confirm;
pub mod cost;
pub mod flow;
pub mod model;
pub mod structured;
pub mod tools;
