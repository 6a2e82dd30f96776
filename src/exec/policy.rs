//! Feature-cache policies and the static baselines' selections.

use crate::cache::dynamic::DynamicKind;
use crate::error::{Error, Result};
use crate::sample::sampler::EpochSampler;
use crate::sample::source::NeighborSource;
use crate::store::Store;

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
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "unknown policy {s:?}; use ginex, degree, presc, lru, sieve, s3fifo, clock, mmap or none"
                ))
            })
    }

    /// The dynamic row-cache policy this is, if it is one.
    pub fn dynamic(self) -> Option<DynamicKind> {
        match self {
            Policy::Lru => Some(DynamicKind::Lru),
            Policy::Sieve => Some(DynamicKind::Sieve),
            Policy::S3fifo => Some(DynamicKind::S3fifo),
            Policy::Clock => Some(DynamicKind::Clock),
            _ => None,
        }
    }
}

/// The `k` nodes with the highest out-degree (ties by id).
pub fn top_out_degree(store: &Store, k: usize) -> Result<Vec<u64>> {
    let deg = crate::sample::ncache::out_degrees(store)?;
    Ok(top_k(
        &deg.iter().map(|&d| u64::from(d)).collect::<Vec<_>>(),
        k,
    ))
}

/// The `k` nodes sampled most often over `rounds` pre-sampling epochs
/// (epochs numbered from `u64::MAX` down, so they never coincide with a
/// training epoch), counting from sampling alone.
pub fn top_presampled(
    source: &dyn NeighborSource,
    train: &[u64],
    batch_size: usize,
    fanouts: &[i64],
    seed: u64,
    rounds: u64,
    k: usize,
) -> Result<Vec<u64>> {
    let mut counts = vec![0u64; source.num_nodes() as usize];
    for r in 0..rounds.max(1) {
        let sampler = EpochSampler::new(
            source,
            train,
            batch_size,
            fanouts.to_vec(),
            seed,
            u64::MAX - r,
        )?;
        for b in 0..sampler.num_batches() {
            for &id in &sampler.sample(b)?.ids {
                counts[id as usize] += 1;
            }
        }
    }
    Ok(top_k(&counts, k))
}

/// The `k` highest-scoring nodes, ties by id (a prefix of a longer
/// ranking is the shorter one).
pub(crate) fn top_k(score: &[u64], k: usize) -> Vec<u64> {
    let mut nodes: Vec<u64> = (0..score.len() as u64).collect();
    nodes.sort_by(|&a, &b| score[b as usize].cmp(&score[a as usize]).then(a.cmp(&b)));
    nodes.truncate(k);
    nodes
}
