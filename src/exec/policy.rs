//! The feature-cache policies an epoch can run (the static baselines'
//! selections are in `cache::static_policy`).

use crate::cache::dynamic::DynamicKind;
use crate::error::{Error, Result};
use crate::exec::config::CacheConfig;

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
    /// Dynamic SIEVE row cache (NSDI'24).
    Sieve,
    /// Dynamic S3-FIFO row cache (SOSP'23).
    S3fifo,
    /// Dynamic CLOCK (second chance) row cache.
    Clock,
    /// No application cache: memory-mapped files through the page cache.
    Mmap,
    /// No cache: every row read through the gather engine.
    None,
}

impl Policy {
    /// Every policy.
    pub const ALL: [Policy; 9] = [
        Policy::Ginex,
        Policy::Degree,
        Policy::Presc,
        Policy::Lru,
        Policy::Sieve,
        Policy::S3fifo,
        Policy::Clock,
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
            Policy::Sieve => "sieve",
            Policy::S3fifo => "s3fifo",
            Policy::Clock => "clock",
            Policy::Mmap => "mmap",
            Policy::None => "none",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Policy> {
        Error::parse_name(s, "policy", &Policy::ALL, Policy::name)
    }

    /// The dynamic row-cache policy this is, if it is one.
    #[doc(hidden)]
    pub fn dynamic(self) -> Option<DynamicKind> {
        match CacheConfig::of(self) {
            CacheConfig::Dynamic(kind) => Some(kind),
            _ => None,
        }
    }
}
