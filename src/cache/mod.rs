//! The buffer manager: Belady's changesets (`belady`: exact and k-hop,
//! from the inspector's traces), the feature cache they drive (also the
//! static baselines' cache), and the dynamic row caches — LRU, SIEVE,
//! S3-FIFO, CLOCK — over one shared slot array and miss path; the static
//! baselines' selections (degree, PreSC).

pub mod belady;
pub mod clock;
pub mod dynamic;
pub mod feature_cache;
pub mod lru;
pub mod s3fifo;
pub mod sieve;
pub mod static_policy;

use crate::cache::dynamic::{DynamicCache, DynamicKind, RowGather};
use crate::error::Result;

/// A dynamic row cache of policy `kind`.
pub fn new_row_cache(
    kind: DynamicKind,
    num_nodes: u64,
    capacity: usize,
    row_bytes: usize,
) -> Result<Box<dyn RowGather>> {
    use self::{clock::Clock, lru::Lru, s3fifo::S3Fifo, sieve::Sieve};
    Ok(match kind {
        DynamicKind::Lru => Box::new(DynamicCache::<Lru>::new(num_nodes, capacity, row_bytes)?),
        DynamicKind::Sieve => Box::new(DynamicCache::<Sieve>::new(num_nodes, capacity, row_bytes)?),
        DynamicKind::S3fifo => {
            Box::new(DynamicCache::<S3Fifo>::new(num_nodes, capacity, row_bytes)?)
        }
        DynamicKind::Clock => Box::new(DynamicCache::<Clock>::new(num_nodes, capacity, row_bytes)?),
    })
}
