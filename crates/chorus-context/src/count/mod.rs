//! Token counting per model family: text tokenizers, chat overheads, tools and media.

pub mod approximate;
mod breakdown;
pub mod chat;
pub mod harmony;
#[cfg(feature = "hf")]
pub mod hf;
pub mod profile;
mod pyrepr;
pub mod text;
pub mod tools;

pub use approximate::{ApproxOptions, approximate_message, count_tokens_approximately};
pub use breakdown::Breakdown;
pub use chat::{ConversationCount, TokenCounter};
#[cfg(feature = "hf")]
pub use hf::HfTokenizer;
pub use profile::{ChatOverhead, Family, ModelProfile, ToolHeuristic};
pub use text::{BpeEncoding, TextTokenizer};
