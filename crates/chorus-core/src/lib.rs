//! The chorus message model: universal messages with multimodal parts, tool calls and results,
//! citations and metadata; handoff packets; data parts; their JSON Schemas; and validation.
//!
//! Every other chorus crate speaks in these types: a [`Conversation`] of [`Message`]s is what
//! provider formats convert, token counters count and agents exchange. Unknown keys are kept
//! (`extra`) and written back, so a document read and written again is unchanged.
//!
//! ```
//! use chorus_core::{Conversation, Message, Role, Validator};
//!
//! let conversation = Conversation {
//!     messages: vec![
//!         Message::new(Role::System, "Answer briefly."),
//!         Message::new(Role::User, "What is 2 + 2?"),
//!     ],
//!     ..Conversation::default()
//! };
//! let json = serde_json::to_value(&conversation)?;
//! assert!(Validator::standard().validate_value(&json, None).is_valid());
//! assert_eq!(conversation.messages[1].text(), "What is 2 + 2?");
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! The namespaces: [`handoff`] (seed 003 handoff messages, `harmony_handoff_v1` packets and the
//! mapping between them), [`validate`] (the validator, its limits and JSON reading),
//! [`schema`] (the JSON Schema of each document kind), [`media`] (media payloads of parts) and
//! [`channel`] (the Harmony channel names).

#![warn(missing_docs)]

mod citation;
mod conversation;
pub mod handoff;
pub mod media;
mod message;
mod metadata;
mod nullable;
mod parts;
mod problem;
pub mod schema;
mod tool;
mod tool_given;
pub mod validate;

pub use citation::{Citation, CitationLocation, CitationMap};
pub use conversation::Conversation;
pub use handoff::{HandoffMessage, HandoffPacket, HandoffType, Priority};
pub use media::{DataUrl, Detail, FileRef, ImageUrl, InputAudio, VideoMetadata};
pub use message::{Content, CreatedAt, Message, Role, channel};
pub use metadata::{Latency, Metadata, SafetyCheck, TokenUsage};
pub use nullable::Nullable;
pub use parts::{AudioPart, ContentPart, DataPart, FilePart, ImagePart, ReasoningPart, TextPart};
pub use problem::{Problem, Severity};
pub use schema::Kind;
pub use tool::{FunctionCall, FunctionDefinition, ToolCall, ToolDefinition, ToolOutcome};
pub use validate::{Report, Validator};
