//! The chorus message model: universal messages with multimodal parts, tool calls and results,
//! citations and metadata; handoff packets; data parts; their JSON Schemas; and validation.

#![warn(missing_docs)]

pub mod citation;
pub mod conversation;
pub mod handoff;
pub mod media;
pub mod message;
pub mod metadata;
mod nullable;
pub mod parts;
pub mod schema;
pub mod tool;
mod tool_given;
pub mod validate;

pub use citation::{Citation, CitationLocation, CitationMap};
pub use conversation::Conversation;
pub use handoff::{HandoffMessage, HandoffPacket, HandoffType, Priority};
pub use media::{Detail, FileRef, ImageUrl, InputAudio, VideoMetadata};
pub use message::{Content, CreatedAt, Message, Role};
pub use metadata::{Latency, Metadata, SafetyCheck, TokenUsage};
pub use nullable::Nullable;
pub use parts::{AudioPart, ContentPart, DataPart, FilePart, ImagePart, ReasoningPart, TextPart};
pub use schema::Kind;
pub use tool::{FunctionCall, FunctionDefinition, ToolCall, ToolDefinition, ToolOutcome};
pub use validate::{Problem, Report, Severity, Validator};
