//! The buffer manager: Belady's changesets (`belady`: exact and k-hop,
//! from the inspector's traces), the feature cache they drive (also the
//! static baselines' cache), the dynamic row caches — LRU, SIEVE, S3-FIFO,
//! CLOCK, 2Q — over one shared slot array and miss path (`dynamic`), the static
//! baselines' selections (degree, PreSC); and the policy table.
//!
//! # The policy table
//!
//! [`TABLE`] declares every feature-cache policy once: its [`Policy`]
//! variant, its name on the command line and in reports, its [`Kind`] (for
//! a dynamic policy: the replacement type, whose constructor and state
//! bytes the [`Dynamic`] descriptor carries), its colour in plots and a
//! line for `--help`. The executor, the memory planner, the policy lab, the
//! benchmarks' defaults, the plots and the command line derive from it.
//!
//! A new dynamic policy is one file here implementing
//! [`Replacement`](dynamic::Replacement) (see `lru.rs`), plus its `mod`
//! line, its [`Policy`] variant and its row below.

pub mod belady;
pub mod clock;
pub mod dynamic;
pub mod feature_cache;
pub mod lru;
pub mod s3fifo;
pub mod sieve;
pub mod static_policy;
pub mod two_q;

use crate::cache::dynamic::{Dynamic, RowGather, Simulate};
use crate::error::{Error, Result};

/// Which feature-cache policy an epoch runs (each a row of [`TABLE`]).
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
    /// Dynamic 2Q row cache (VLDB'94).
    TwoQ,
    /// No application cache: memory-mapped files through the page cache.
    Mmap,
    /// No cache: every row read through the gather engine.
    None,
}

/// What a policy is, as the executor, the planner and the lab run it.
#[derive(Clone, Copy)]
pub enum Kind {
    /// Belady changesets per superbatch (the inspector–executor).
    Belady,
    /// Static: the highest out-degree nodes.
    Degree,
    /// Static: the nodes most sampled in pre-sampling epochs.
    Presc,
    /// A demand-filled row cache over the shared slot array
    /// ([`dynamic`]): its replacement's constructor and state bytes.
    Dynamic(Dynamic),
    /// No application cache: memory-mapped files through the page cache.
    Mmap,
    /// No cache.
    None,
}

/// One row of the policy table.
pub struct Entry {
    /// The policy (its row sits at `policy as usize`).
    pub policy: Policy,
    /// Name on the command line, in reports and in JSON.
    pub name: &'static str,
    /// How it runs.
    pub kind: Kind,
    /// Its colour in every plot.
    pub color: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
}

const fn row(
    policy: Policy,
    name: &'static str,
    kind: Kind,
    color: &'static str,
    about: &'static str,
) -> Entry {
    Entry {
        policy,
        name,
        kind,
        color,
        about,
    }
}

/// Every feature-cache policy, in [`Policy`]'s order (checked when the
/// crate compiles). The order is that of [`Policy::ALL`], of the lab's
/// line-up and of the benchmarks' defaults.
#[rustfmt::skip]
pub const TABLE: &[Entry] = &[
    row(Policy::Ginex,  "ginex",  Kind::Belady, "#d62728", "Belady changesets from the inspector"),
    row(Policy::Degree, "degree", Kind::Degree, "#1f77b4", "static: highest out-degree (PaGraph)"),
    row(Policy::Presc,  "presc",  Kind::Presc,  "#2ca02c", "static: most sampled in pre-sampling (FGNN)"),
    row(Policy::Lru,    "lru",    Kind::Dynamic(Dynamic::of::<lru::Lru>()),       "#ff7f0e", "dynamic LRU"),
    row(Policy::Sieve,  "sieve",  Kind::Dynamic(Dynamic::of::<sieve::Sieve>()),   "#17becf", "dynamic SIEVE (NSDI'24)"),
    row(Policy::S3fifo, "s3fifo", Kind::Dynamic(Dynamic::of::<s3fifo::S3Fifo>()), "#bcbd22", "dynamic S3-FIFO (SOSP'23)"),
    row(Policy::Clock,  "clock",  Kind::Dynamic(Dynamic::of::<clock::Clock>()),   "#e377c2", "dynamic CLOCK (second chance)"),
    row(Policy::TwoQ,   "2q",     Kind::Dynamic(Dynamic::of::<two_q::TwoQ>()),    "#393b79", "dynamic 2Q (VLDB'94)"),
    row(Policy::Mmap,   "mmap",   Kind::Mmap,   "#9467bd", "no cache: mmap through the page cache, no CRC checks (PyG+)"),
    row(Policy::None,   "none",   Kind::None,   "#7f7f7f", "no cache: every row read through the gather engine"),
];

// Row `i` of the table is the policy whose discriminant is `i`.
const _: () = {
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            TABLE[i].policy as usize == i,
            "TABLE rows must follow Policy's order"
        );
        i += 1;
    }
};

impl Policy {
    /// Every policy.
    pub const ALL: [Policy; TABLE.len()] = {
        let mut all = [Policy::None; TABLE.len()];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].policy;
            i += 1;
        }
        all
    };

    /// This policy's row of [`TABLE`].
    #[doc(hidden)]
    pub fn entry(self) -> &'static Entry {
        &TABLE[self as usize]
    }

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Result<Policy> {
        Error::parse_name(s, "policy", &Policy::ALL, Policy::name)
    }

    /// The dynamic row-cache policy this is, if it is one.
    #[doc(hidden)]
    pub fn dynamic(self) -> Option<DynamicKind> {
        match self.entry().kind {
            Kind::Dynamic(_) => Some(DynamicKind(self)),
            _ => None,
        }
    }
}

/// A dynamic row-cache policy: a [`Policy`] of [`Kind::Dynamic`] (made by
/// [`Policy::dynamic`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynamicKind(Policy);

impl std::hash::Hash for DynamicKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.0 as usize).hash(state);
    }
}

/// How many rows of [`TABLE`] are dynamic.
const DYNAMIC_COUNT: usize = {
    let (mut n, mut i) = (0, 0);
    while i < TABLE.len() {
        if let Kind::Dynamic(_) = TABLE[i].kind {
            n += 1;
        }
        i += 1;
    }
    n
};

impl DynamicKind {
    /// Every dynamic policy, in the table's order.
    pub const ALL: [DynamicKind; DYNAMIC_COUNT] = {
        let mut all = [DynamicKind(Policy::None); DYNAMIC_COUNT];
        let (mut n, mut i) = (0, 0);
        while i < TABLE.len() {
            if let Kind::Dynamic(_) = TABLE[i].kind {
                all[n] = DynamicKind(TABLE[i].policy);
                n += 1;
            }
            i += 1;
        }
        all
    };

    /// The epoch policy that runs this cache.
    pub fn policy(self) -> Policy {
        self.0
    }

    /// Name on the command line.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    fn descriptor(self) -> &'static Dynamic {
        match &self.0.entry().kind {
            Kind::Dynamic(d) => d,
            // A DynamicKind is only made of a dynamic row.
            _ => unreachable!("{:?} is not a dynamic policy", self.0),
        }
    }

    /// Bytes a cache of `capacity` rows of `row_bytes` over `num_nodes`
    /// nodes takes besides the address table (see [`Dynamic::cache_bytes`]).
    pub fn cache_bytes(self, capacity: u64, num_nodes: u64, row_bytes: u64) -> u64 {
        self.descriptor()
            .cache_bytes(capacity, num_nodes, row_bytes)
    }

    /// The most rows whose [`cache_bytes`](Self::cache_bytes) fit in
    /// `bytes` (at most `num_nodes`).
    pub fn rows_within(self, bytes: u64, num_nodes: u64, row_bytes: u64) -> u64 {
        self.descriptor().rows_within(bytes, num_nodes, row_bytes)
    }

    /// An empty row cache of `capacity` rows of `row_bytes`, as the
    /// executor runs it.
    pub fn row_cache(
        self,
        num_nodes: u64,
        capacity: usize,
        row_bytes: usize,
    ) -> Result<Box<dyn RowGather>> {
        (self.descriptor().row_cache)(num_nodes, capacity, row_bytes)
    }

    /// Its bookkeeping alone (no row bytes), as the lab replays it.
    pub fn residency(self, num_nodes: u64, capacity: usize) -> Result<Box<dyn Simulate>> {
        (self.descriptor().residency)(num_nodes, capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_parse_back() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(p.name()).unwrap(), p);
            assert_eq!(p.entry().policy, p);
        }
        let mut names: Vec<&str> = TABLE.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
        assert!(Policy::parse("belady").is_err());
    }

    #[test]
    fn dynamic_kinds_are_the_dynamic_rows() {
        let dynamic: Vec<Policy> = Policy::ALL
            .into_iter()
            .filter(|p| p.dynamic().is_some())
            .collect();
        let all: Vec<Policy> = DynamicKind::ALL.iter().map(|k| k.policy()).collect();
        assert_eq!(all, dynamic);
        assert!(all.len() >= 4);
        assert!(Policy::Ginex.dynamic().is_none());
    }

    #[test]
    fn rows_within_is_the_most_that_fits() {
        let (nodes, rb) = (100_000u64, 256u64);
        for kind in DynamicKind::ALL {
            for budget in [0u64, 1000, 300_000, 5 << 20, 1 << 40] {
                let rows = kind.rows_within(budget, nodes, rb);
                assert!(kind.cache_bytes(rows, nodes, rb) <= budget || rows == 0);
                if rows < nodes {
                    assert!(
                        kind.cache_bytes(rows + 1, nodes, rb) > budget,
                        "{kind:?} {budget}"
                    );
                }
            }
        }
        // S3-FIFO's ghost queue costs rows: fewer fit than LRU's.
        let (lru, s3) = (Policy::Lru.dynamic(), Policy::S3fifo.dynamic());
        let lru = lru.unwrap().rows_within(5 << 20, nodes, rb);
        let s3 = s3.unwrap().rows_within(5 << 20, nodes, rb);
        assert!(s3 < lru, "{s3} < {lru}");
    }
}
