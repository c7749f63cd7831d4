//! Options of an encoder.

/// What to do with speaker names when the target has no place for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NamePolicy {
    /// Write `name: ` in front of the message text.
    #[default]
    Prefix,
    /// Fold runs of named text turns into one user message with a `<history>` block.
    History,
}

/// How to encode: the speaker-name policy and the template switches of text formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// What to do with speaker names on targets without a `name` field.
    pub names: NamePolicy,
    /// Text formats: end with the opening of an assistant turn.
    pub add_generation_prompt: bool,
    /// Qwen3: `Some(false)` writes the empty think block after the generation prompt.
    pub enable_thinking: Option<bool>,
}
