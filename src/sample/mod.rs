//! Sampling: the k-hop neighbor sampler and the neighbor sources it reads
//! lists from (in memory, or the store through batched reads behind a
//! neighbor cache). Knows nothing about features.

pub mod ncache;
pub mod ncache_reuse;
pub mod sampler;
pub mod source;
