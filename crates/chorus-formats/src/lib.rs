//! Codecs between chorus messages and provider formats; every loss is reported, never silent.
//!
//! Each format lives in its own module with the same shape: `mod.rs` (capability table and the
//! public `decode` / `encode`), `decode.rs`, `encode.rs` and golden tests. Every codec converts
//! to and from [`chorus_core::Conversation`]; no codec converts straight into another.

pub mod a2a;
pub mod agentscope;
pub mod anthropic;
pub mod capability;
pub mod chorus;
pub mod common;
pub mod error;
mod format;
pub mod gemini;
pub mod harmony;
pub mod loss;
pub mod openai_chat;
pub mod openai_responses;
pub mod options;
pub mod qwen3;

mod registry;

pub use capability::Capabilities;
pub use common::names::NamePolicy;
pub use error::{DecodeError, Error};
pub use format::Format;
pub use loss::{Encoded, Loss, Policy};
pub use options::EncodeOptions;
pub use registry::convert;
