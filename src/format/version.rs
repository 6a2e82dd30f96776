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

/// Version 1.0: the first store format.
pub const V1_0: Version = Version { major: 1, minor: 0 };
/// Version 1.1: the neighbor-cache header records the budget it was built
/// for. Every other kind is unchanged and still written as 1.0 (see
/// `FileKind::written_version`).
pub const V1_1: Version = Version { major: 1, minor: 1 };
/// Version 1.2: runtime files start with a `run` record naming their store,
/// run and parameters (format/runtime.md); their readers need it, so they
/// refuse older runtime files. Every other kind is unchanged.
pub const V1_2: Version = Version { major: 1, minor: 2 };
/// Version 1.3: typed (heterogeneous) stores, whose `schema` file (a new
/// kind, format/schema.md) lists node types and relations (readers before
/// 1.3 refuse a manifest that lists it); runtime record payloads are
/// bincode encodings of Rust structs (format/runtime.md; their readers
/// refuse older runtime files). Every other kind is unchanged.
pub const V1_3: Version = Version { major: 1, minor: 3 };
/// Version 1.4: per-relation fanouts; a runtime file whose run samples
/// them records them at the end of its `run` record (format/runtime.md)
/// and is written as 1.4. Runtime files of one count per hop are still
/// written as 1.3, byte for byte; every other kind is unchanged.
pub const V1_4: Version = Version { major: 1, minor: 4 };
/// Version 1.5: per-type feature layouts; a `schema` whose featured types
/// differ in dimension or dtype is written as 1.5, each node type entry
/// carrying its dtype, and the feature pages hold one page-aligned
/// section per run of types of one layout (format/schema.md,
/// format/features.md "Sections"). A schema of one layout is still
/// written as 1.3, byte for byte; every other kind is unchanged.
pub const V1_5: Version = Version { major: 1, minor: 5 };
/// Version 1.6: edge splits for link prediction, a new kind
/// (`edge_splits`, format/edge-splits.md; readers before 1.6 refuse a
/// manifest that lists it); and link batches: a runtime file of a link
/// run records its negatives at the end of its `run` record and holds a
/// `link` record after each batch's `adj` (format/runtime.md), and is
/// written as 1.6. Every other kind is unchanged.
pub const V1_6: Version = Version { major: 1, minor: 6 };
/// Version 1.7: the `features.pages` header records the row format's
/// dimension and dtype after the common header (format/features.md, "The
/// layout record"), so a manifest that disagrees with the pages is
/// refused at open. `features.pages` is written as 1.7; every other kind
/// is unchanged. An older `features.pages` (zero padding there) still
/// opens.
pub const V1_7: Version = Version { major: 1, minor: 7 };
/// Version 1.8: LABOR sampling; a runtime file whose run samples with a
/// LABOR sampler ends its `run` record with the sampler (after a link
/// run's negatives) and carries each sampled edge's importance weight in
/// its `adj` records (format/runtime.md), and is written as 1.8. Runtime
/// files of neighbor sampling are written as before, byte for byte; every
/// other kind is unchanged.
pub const V1_8: Version = Version { major: 1, minor: 8 };
/// Version 1.9: link prediction on one relation and without exclusion.
/// An `edge_splits` file of one relation of a typed store records it
/// (flag bit 2 and the relation's index, format/edge-splits.md) and is
/// written as 1.9; a runtime file of a link run whose batches keep their
/// own edges (`--exclude none`) records that in its `run` record
/// (format/runtime.md) and is written as 1.9. Every other file is
/// written as before, byte for byte.
pub const V1_9: Version = Version { major: 1, minor: 9 };
/// Version 1.10: a store keeps every node's out-degree, a new kind
/// (`out_degrees`, format/out-degrees.md; readers before 1.10 refuse a
/// manifest that lists it), so that a run does not count them with a pass
/// over the whole topology before its first batch. Every other file is
/// written as before, byte for byte.
pub const V1_10: Version = Version {
    major: 1,
    minor: 10,
};
/// Version 1.11: the `q8` feature dtype (code 4: 8-bit codes with a
/// per-row affine scale, format/features.md "q8 rows"). A `features.pages`
/// of q8 rows is written as 1.11 and holds the q8 error record after its
/// layout record; a q8 layout record in an older file is corrupt. Every
/// other file is written as before, byte for byte.
pub const V1_11: Version = Version {
    major: 1,
    minor: 11,
};
/// The newest version this build reads and writes.
pub const CURRENT: Version = V1_11;
/// The oldest version this build still reads.
pub const OLDEST_SUPPORTED: Version = V1_0;

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
