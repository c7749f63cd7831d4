//! Harmony chat format of gpt-oss: tokens, rendering, parsing and streaming.

pub mod builtin_tools;
pub mod encoding;
pub mod model;
pub mod reference_json;
pub mod render;
pub mod tokens;
pub mod typescript;

pub use encoding::{Encoding, encoding};
pub use model::{
    Author, ChannelConfig, Content, Conversation, DeveloperContent, Message, ReasoningEffort,
    ResponseFormat, Role, SystemContent, TextContent, ToolDescription, ToolNamespaceConfig,
};
pub use render::{RenderError, RenderMode, RenderOptions, render};
pub use tokens::Rank;
pub use typescript::TypeScriptStyle;
pub mod parse;
mod pretokenize;
/// The streaming parser; it lives under [`mod@parse`], whose full parse is this parser run to
/// the end.
pub use parse::stream;

pub use parse::{Diagnostic, DiagnosticKind, ParseError, ParseOptions, ParseOutput, parse};
pub use stream::StreamParser;
pub mod chorus_map;
pub mod cli;
