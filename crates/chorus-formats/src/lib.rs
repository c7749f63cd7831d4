//! Converts conversations between chorus messages and the formats of LLM APIs (OpenAI Chat
//! Completions and Responses, Anthropic Messages, Gemini, Qwen3 and Harmony text, AgentScope,
//! A2A), reporting everything a target cannot carry instead of losing it silently.
//!
//! Every codec decodes into a [`chorus_core::Conversation`] and encodes from one; no codec
//! converts straight into another. A [`Format`] names a format on the command line; each format
//! has a codec type implementing [`Codec`] ([`Anthropic`], [`Qwen3`], ...).
//!
//! ```
//! use chorus_formats::{Codec, EncodeOptions, Format, OpenAiChat, Policy, convert};
//!
//! let request = r#"{"messages": [{"role": "user", "name": "alice", "content": "hi"}]}"#;
//!
//! // Between two formats, by id: Anthropic has no speaker names, so the name is written into
//! // the text and the loss is reported.
//! let from: Format = "openai-chat".parse()?;
//! let anthropic = convert(from, Format::Anthropic, request, &EncodeOptions::default(), false)?;
//! assert!(anthropic.value.contains("alice: hi"));
//! assert_eq!(anthropic.losses[0].path, "/messages/0/name");
//! assert_eq!(anthropic.losses[0].policy, Policy::Prefixed);
//!
//! // With one codec: decode to a chorus conversation, encode back as a JSON value.
//! let conversation = OpenAiChat::decode_str(request)?;
//! assert_eq!(conversation.messages[0].name.as_deref(), Some("alice"));
//! let back = OpenAiChat::encode(&conversation, &EncodeOptions::default())?;
//! assert!(back.losses.is_empty());
//! assert_eq!(back.value["messages"][0]["content"], "hi");
//! # Ok::<(), chorus_formats::Error>(())
//! ```
//!
//! `examples/convert.rs` converts a file from one format to another, as `chorus convert` does.

mod capability;
mod codec;
mod codecs;
mod common;
mod error;
mod format;
mod loss;
mod options;

pub use capability::Capabilities;
pub use codec::{Codec, Document};
pub use codecs::{
    A2a, AgentScope, Anthropic, Chorus, Gemini, Harmony, OpenAiChat, OpenAiChatResponse,
    OpenAiResponses, Qwen3, convert,
};
pub use common::pairing::is_paired;
pub use common::spelling::to_camel;
pub use error::Error;
pub use format::Format;
pub use loss::{Encoded, Loss, Policy};
pub use options::{EncodeOptions, NamePolicy};

/// Chat Completions pieces for clients of an OpenAI-compatible endpoint: the request body, a
/// `chat.completion` response, and streamed chunks assembled into the reply.
pub mod openai_chat {
    pub use crate::codecs::openai_chat::{StreamAccumulator, decode_response};

    use chorus_core::Conversation;
    use serde_json::Value;

    use crate::{EncodeOptions, Encoded};

    /// The Chat Completions request body for a conversation, with what it could not carry
    /// (speaker names are carried as they are, so `options` changes nothing).
    pub fn encode(conversation: &Conversation, _options: &EncodeOptions) -> Encoded<Value> {
        crate::codecs::openai_chat::request(conversation)
    }
}
