//! Errors: input that cannot be decoded (a [`Problem`]), and strict-mode rejections.

use chorus_core::Problem;

use crate::format::Format;
use crate::loss::{Encoded, Loss};

/// Any failure of a conversion.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not valid in the source format: where (a JSON pointer, or `token N` in
    /// Harmony text), what was expected and found, and a hint when one is known.
    #[error("at {0}")]
    Decode(#[from] Problem),
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
