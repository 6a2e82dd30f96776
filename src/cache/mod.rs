//! The buffer manager: the feature cache driven by changesets, and (with
//! the executor issue) the static baseline policies.

pub mod feature_cache;
pub mod lru;
