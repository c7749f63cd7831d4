//! Token counting, media cost models, data-part assembly and trimming.
//!
//! Everything here is a pure function of its inputs, except reading image headers from local
//! files when asked to and the ffmpeg subprocess of [`prepare`].

pub mod count;
pub mod data;
pub mod error;
pub mod media;
pub mod prepare;
pub mod trim;

pub use count::{Breakdown, ConversationCount, TokenCounter};
pub use error::{ContextError, Result};
pub use media::CostTable;
