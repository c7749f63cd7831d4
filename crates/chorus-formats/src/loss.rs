//! What a conversion could not carry: `Loss { path, what, policy }` and `Encoded<T>`.

use serde::{Deserialize, Serialize};

/// What the encoder did with an item the target cannot carry as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The item is gone from the output.
    Dropped,
    /// The item is kept in a weaker form (e.g. a data part written as text).
    Downgraded,
    /// The item is kept but placed elsewhere (e.g. a tool image in the next user message).
    Moved,
    /// The item was merged into a neighbour (e.g. consecutive turns of one role).
    Merged,
    /// The speaker name was written into the text as a prefix.
    Prefixed,
    /// The message was folded into a `<history>` block.
    Folded,
    /// The image was rotated before sending, so its `rotation` field is gone.
    Applied,
}

impl Policy {
    /// The policy as written in loss reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Dropped => "dropped",
            Policy::Downgraded => "downgraded",
            Policy::Moved => "moved",
            Policy::Merged => "merged",
            Policy::Prefixed => "prefixed",
            Policy::Folded => "folded",
            Policy::Applied => "applied",
        }
    }
}

/// One item of the input that the output does not carry unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loss {
    /// JSON pointer into the chorus conversation that was encoded.
    pub path: String,
    /// What happened, for people.
    pub what: String,
    /// What the encoder did.
    pub policy: Policy,
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.path, self.policy.as_str(), self.what)
    }
}

/// An encoded value and the losses of producing it.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded<T> {
    /// The output in the target format.
    pub value: T,
    /// Everything the output does not carry unchanged; empty when lossless.
    pub losses: Vec<Loss>,
}

impl<T> Encoded<T> {
    /// Applies `f` to the value and keeps the losses.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Encoded<U> {
        Encoded {
            value: f(self.value),
            losses: self.losses,
        }
    }
}

/// Collects losses while an encoder walks a conversation.
#[derive(Debug, Default)]
pub struct Losses(Vec<Loss>);

impl Losses {
    /// Records a loss at `path`.
    pub fn push(&mut self, path: impl Into<String>, policy: Policy, what: impl Into<String>) {
        self.0.push(Loss {
            path: path.into(),
            what: what.into(),
            policy,
        });
    }

    /// Runs `encoder`, which records what it cannot carry, and returns its output with the losses.
    pub fn collect<T>(encoder: impl FnOnce(&mut Losses) -> T) -> Encoded<T> {
        let mut losses = Losses::default();
        let value = encoder(&mut losses);
        losses.finish(value)
    }

    /// Wraps `value` with the collected losses.
    pub fn finish<T>(self, value: T) -> Encoded<T> {
        Encoded {
            value,
            losses: self.0,
        }
    }
}

/// Escapes one JSON pointer segment (`~` → `~0`, `/` → `~1`).
pub fn pointer_segment(key: &str) -> std::borrow::Cow<'_, str> {
    if key.contains(['~', '/']) {
        key.replace('~', "~0").replace('/', "~1").into()
    } else {
        key.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_segments_are_escaped() {
        assert_eq!(pointer_segment("a/b~c"), "a~1b~0c");
        assert_eq!(pointer_segment("plain"), "plain");
    }
}
