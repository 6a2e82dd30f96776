//! The feature-cache policies an epoch can run (the static baselines'
//! selections are in `cache::static_policy`).

use crate::error::{Error, Result};

/// Which feature-cache policy an epoch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Belady changesets from the inspector's runtime files.
    Ginex,
    /// Static cache of the highest out-degree nodes (PaGraph).
    Degree,
    /// Static cache of the nodes most often sampled in pre-sampling epochs
    /// (FGNN's PreSC).
    Presc,
    /// Dynamic LRU row cache.
    Lru,
    /// No application cache: memory-mapped files through the page cache.
    Mmap,
    /// No cache: every row read through the gather engine.
    None,
}

impl Policy {
    /// Every policy.
    pub const ALL: [Policy; 6] = [
        Policy::Ginex,
        Policy::Degree,
        Policy::Presc,
        Policy::Lru,
        Policy::Mmap,
        Policy::None,
    ];

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Ginex => "ginex",
            Policy::Degree => "degree",
            Policy::Presc => "presc",
            Policy::Lru => "lru",
            Policy::Mmap => "mmap",
            Policy::None => "none",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Policy> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown policy {s:?}; use ginex, degree, presc, lru, mmap or none"
                ))
            })
    }
}
