//! The executor: one epoch of data preparation under any feature-cache
//! policy, with stage timers and counters (`ginex epoch`). The memory
//! planner (one `--memory` budget split between the caches) comes later;
//! for now the split is explicit. [`curves`] is the policy lab: miss-ratio
//! curves of every policy replayed from one sampled trace.

pub mod curves;
pub mod epoch;
pub mod mmap;
pub mod policy;
