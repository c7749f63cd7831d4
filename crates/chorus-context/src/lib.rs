//! Context management for chorus conversations: count their tokens for a model (text, images,
//! audio, tool definitions and chat overhead), trim them to a budget without separating a tool
//! call from its result, assemble data parts, and prepare video for models.
//!
//! Everything here is a pure function of its inputs, except reading image headers from local
//! files when asked to and the ffmpeg subprocess of [`prepare`].
//!
//! ```
//! use chorus_context::TokenCounter;
//! use chorus_context::trim::trim_chorus;
//! use chorus_core::{Message, Role};
//!
//! let messages = vec![
//!     Message::new(Role::System, "Be brief."),
//!     Message::new(Role::User, "Tell me about the weather. ".repeat(40)),
//!     Message::new(Role::Assistant, "It rains."),
//!     Message::new(Role::User, "What is 2 + 2?"),
//! ];
//! let counter = TokenCounter::for_model("gpt-4o")?;
//! assert!(counter.count_messages(&messages)?.total > 200);
//!
//! let trimmed = trim_chorus(&messages, &[], &counter, 60, None)?;
//! assert!(counter.count_messages(&trimmed.messages)?.total <= 60);
//! assert_eq!(trimmed.messages[0].text(), "Be brief."); // the system message is pinned
//! assert_eq!(trimmed.messages.last().map(Message::text).as_deref(), Some("What is 2 + 2?"));
//! # Ok::<(), chorus_context::ContextError>(())
//! ```
//!
//! Counting is at the root ([`TokenCounter`] and what it returns); the namespaces are
//! [`trim`] (the chorus strategy, and [`trim::langchain`] equal to LangChain's
//! `trim_messages`), [`media`] (image and audio cost models and their price table),
//! [`data`] (seed 004 data messages) and [`prepare`] (video frames and audio with ffmpeg).

mod count;
pub mod data;
mod error;
pub mod media;
pub mod prepare;
pub mod trim;

#[cfg(feature = "hf")]
pub use count::HfTokenizer;
pub use count::{
    ApproxOptions, BpeEncoding, Breakdown, ChatOverhead, ConversationCount, Family, ModelProfile,
    TextTokenizer, TokenCounter, ToolHeuristic, count_tokens_approximately,
};
pub use error::{ContextError, Result};
pub use media::CostTable;
