//! Errors: input that cannot be decoded, and strict-mode rejections.

use crate::format::Format;
use crate::loss::{Encoded, Loss};

/// A rejected input: where, what was expected, what was found, and a hint when one is known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at `{pointer}`: expected {expected}, found {found}{}", hint.as_ref().map(|h| format!(" (hint: {h})")).unwrap_or_default())]
pub struct DecodeError {
    /// JSON pointer (or `line:column` for text formats) of the offending value.
    pub pointer: String,
    /// What the format requires there.
    pub expected: String,
    /// What the input has there.
    pub found: String,
    /// How to fix a common mistake.
    pub hint: Option<String>,
}

impl DecodeError {
    /// A rejection at `pointer`.
    pub fn new(
        pointer: impl Into<String>,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) -> Self {
        DecodeError {
            pointer: pointer.into(),
            expected: expected.into(),
            found: found.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

/// Any failure of a conversion.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not valid in the source format.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// Strict mode: the target cannot carry everything.
    #[error("strict mode: the target cannot carry {} item(s); first: {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
    Lossy(Vec<Loss>),
    /// A format id that does not exist.
    #[error("unknown format `{0}`; expected one of: {list}", list = Format::ids().join(", "))]
    UnknownFormat(String),
    /// The format exists but cannot be used in this direction.
    #[error("{0}")]
    Unsupported(String),
}

impl<T> Encoded<T> {
    /// The value, or an error listing the losses when there are any (strict mode).
    pub fn strict(self) -> Result<T, Error> {
        if self.losses.is_empty() {
            Ok(self.value)
        } else {
            Err(Error::Lossy(self.losses))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::loss::{Losses, Policy};

    #[test]
    fn strict_mode_turns_losses_into_an_error() {
        let mut losses = Losses::default();
        assert_eq!(Losses::default().finish(1).strict().unwrap(), 1);
        losses.push("/messages/0/name", Policy::Dropped, "no names");
        let err = losses.finish(1).strict().unwrap_err();
        assert!(err.to_string().contains("/messages/0/name"), "{err}");
    }
}
