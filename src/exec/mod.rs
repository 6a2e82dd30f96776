//! The executor: one epoch of data preparation under any feature-cache
//! policy, with stage timers and counters (`ginex epoch`). The memory
//! planner (one `--memory` budget split between the caches) comes later;
//! for now the split is explicit.

pub mod epoch;
pub mod mmap;
pub mod policy;
