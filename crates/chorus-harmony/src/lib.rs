//! The Harmony chat format of gpt-oss: render conversations into o200k_harmony tokens and parse
//! completions back into messages, token-exact with openai-harmony 0.0.8.
//!
//! [`render`] turns a [`Conversation`] into token ids; [`parse`] reads completion tokens into
//! [`Message`]s (strict, or lenient for messy model output), and [`StreamParser`] does the same
//! one token at a time. [`encoding`] is the tokenizer; [`tokens`] names the special tokens;
//! [`chorus_map`] maps chorus conversations to Harmony ones and back; [`CompletionTokens`] reads a
//! raw completions engine's reply chunks into tokens.
//!
//! ```
//! use chorus_harmony::{
//!     Conversation, Message, ParseOptions, RenderMode, RenderOptions, Role, encoding, parse,
//!     render,
//! };
//!
//! let conversation = Conversation {
//!     messages: vec![Message::new(Role::User, "What is 2 + 2?")],
//! };
//! let options = RenderOptions { mode: RenderMode::Completion, ..RenderOptions::default() };
//! let prompt = render(&conversation, &options)?;
//! assert!(encoding().decode_utf8(&prompt)?.ends_with("<|start|>assistant"));
//!
//! // The model's reply, after the prompt's `<|start|>assistant`.
//! let reply = encoding().encode_with_special_tokens("<|channel|>final<|message|>4<|end|>");
//! let parsed = parse(&reply, Some(Role::Assistant), ParseOptions::STRICT)?;
//! assert_eq!(parsed.messages[0].channel.as_deref(), Some("final"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod builtin_tools;
pub mod chorus_map;
mod completion;
mod encoding;
mod model;
mod parse;
mod pretokenize;
pub mod reference_json;
mod render;
pub mod tokens;
mod typescript;

pub use completion::{BadTokenId, CompletionTokens};
pub use encoding::{DecodeError, Encoding, UnknownToken, encoding};
pub use model::{
    Author, ChannelConfig, Content, Conversation, DeveloperContent, Message, ReasoningEffort,
    ResponseFormat, Role, SystemContent, TextContent, ToolDescription, ToolNamespaceConfig,
};
pub use parse::stream::{State as StreamState, StreamParser};
pub use parse::{Diagnostic, DiagnosticKind, ParseOptions, ParseOutput, Repair, parse};
pub use render::{RenderMode, RenderOptions, render, render_message, render_message_with};
pub use tokens::Rank;
pub use typescript::TypeScriptStyle;
