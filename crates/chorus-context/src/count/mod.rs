//! Token counting per model family: text tokenizers, chat overheads, tools and media.

mod approximate;
mod breakdown;
mod chat;
mod harmony;
#[cfg(feature = "hf")]
mod hf;
mod profile;
mod pyrepr;
mod text;
mod tools;

pub use approximate::{ApproxOptions, count_tokens_approximately};
pub use breakdown::Breakdown;
pub use chat::{ConversationCount, TokenCounter};
#[cfg(feature = "hf")]
pub use hf::HfTokenizer;
pub use profile::{ChatOverhead, Family, ModelProfile, ToolHeuristic};
pub use text::{BpeEncoding, TextTokenizer};
