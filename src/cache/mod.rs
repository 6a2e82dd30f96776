//! The buffer manager: the feature cache driven by changesets (also the
//! static baselines' cache), and the dynamic row caches — LRU, SIEVE,
//! S3-FIFO, CLOCK — over one shared slot array and miss path; the static
//! baselines' selections (degree, PreSC).

pub mod clock;
pub mod dynamic;
pub mod feature_cache;
pub mod lru;
pub mod s3fifo;
pub mod sieve;
pub mod static_policy;
