//! Format versions and the range this build reads.

use std::fmt;

/// A format version. Ordered lexicographically by (major, minor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Incompatible layout changes bump the major version.
    pub major: u16,
    /// Compatible additions bump the minor version.
    pub minor: u16,
}

/// The version this build writes.
pub const CURRENT: Version = Version { major: 1, minor: 0 };
/// The oldest version this build still reads.
pub const OLDEST_SUPPORTED: Version = Version { major: 1, minor: 0 };

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
