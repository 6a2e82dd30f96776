//! The buffer manager: the feature cache driven by changesets, the LRU
//! baseline and the static baselines' selections (degree, PreSC).

pub mod feature_cache;
pub mod lru;
pub mod static_policy;
