//! TEMPORARY STUB of the link-store helper's edge-split types (issue #40,
//! contract section 1), which the trainer codes against. Replaced by
//! link-store's module when it lands.

/// Held-out (or training) positive edges of one split, and the negatives
/// they are evaluated against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EdgeSplit {
    /// Source of each positive.
    pub src: Vec<u64>,
    /// Destination of each positive.
    pub dst: Vec<u64>,
    /// K negatives per positive.
    pub negatives: Option<Negatives>,
}

/// K negatives per positive, row-major.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Negatives {
    /// Negatives per positive.
    pub k: usize,
    /// Sources.
    pub src: Vec<u64>,
    /// Destinations.
    pub dst: Vec<u64>,
}

/// A store's edge splits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EdgeSplits {
    /// Imported undirected.
    pub undirected: bool,
    /// None = every CSC edge is a training positive.
    pub train: Option<EdgeSplit>,
    /// Validation edges.
    pub valid: EdgeSplit,
    /// Test edges.
    pub test: EdgeSplit,
}
