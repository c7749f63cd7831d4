//! Tokens by category: what a message's count is spent on.

use serde::Serialize;

/// Tokens by what they are spent on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Breakdown {
    /// Text of contents, names, reasoning and rendered data parts.
    pub text: usize,
    /// Images and video frames.
    pub images: usize,
    /// Audio.
    pub audio: usize,
    /// Tool calls and tool definitions.
    pub tools: usize,
    /// Framing: per-message tokens, role names, reply priming.
    pub overhead: usize,
}

impl Breakdown {
    /// The sum of all categories.
    pub fn total(&self) -> usize {
        self.text + self.images + self.audio + self.tools + self.overhead
    }

    /// Adds `other` category by category.
    pub(super) fn add(&mut self, other: &Breakdown) {
        self.text += other.text;
        self.images += other.images;
        self.audio += other.audio;
        self.tools += other.tools;
        self.overhead += other.overhead;
    }
}
