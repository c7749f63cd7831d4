//! Protocol versions (seed 003): another major version is rejected, a newer minor is accepted.

use std::fmt;

/// The protocol major version this build understands.
pub const SUPPORTED_MAJOR: u64 = 1;
/// The newest protocol version this build writes.
pub const SUPPORTED_VERSION: ProtocolVersion = ProtocolVersion {
    major: 1,
    minor: 0,
    patch: 0,
};

/// A `MAJOR.MINOR.PATCH` protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ProtocolVersion {
    /// Incompatible changes.
    pub major: u64,
    /// Backwards-compatible additions.
    pub minor: u64,
    /// Fixes.
    pub patch: u64,
}

/// How a document's version relates to this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionCheck {
    /// Same major, same or older minor: everything is known.
    Supported,
    /// Same major, newer minor: accepted, unknown fields are warnings.
    NewerMinor,
    /// Another major version: rejected.
    Unsupported,
}

impl ProtocolVersion {
    /// Parses `1.2.3`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let mut numbers = text.split('.').map(|n| {
            (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .then(|| n.parse::<u64>().ok())
                .flatten()
        });
        let version = ProtocolVersion {
            major: numbers.next()??,
            minor: numbers.next()??,
            patch: numbers.next()??,
        };
        numbers.next().is_none().then_some(version)
    }

    /// Whether this build can read a document of this version.
    pub fn check(self) -> VersionCheck {
        if self.major != SUPPORTED_MAJOR {
            VersionCheck::Unsupported
        } else if self.minor > SUPPORTED_VERSION.minor {
            VersionCheck::NewerMinor
        } else {
            VersionCheck::Supported
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_classifies_versions() {
        assert_eq!(
            ProtocolVersion::parse("1.0.0").unwrap().check(),
            VersionCheck::Supported
        );
        assert_eq!(
            ProtocolVersion::parse("1.7.2").unwrap().check(),
            VersionCheck::NewerMinor
        );
        assert_eq!(
            ProtocolVersion::parse("2.0.0").unwrap().check(),
            VersionCheck::Unsupported
        );
        assert_eq!(
            ProtocolVersion::parse("0.9.0").unwrap().check(),
            VersionCheck::Unsupported
        );
        for bad in ["1.0", "1.0.0.0", "1..0", "v1.0.0", "1.0.x", "", "+1.0.0"] {
            assert_eq!(ProtocolVersion::parse(bad), None, "{bad}");
        }
    }
}
