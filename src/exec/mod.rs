//! The executor: one epoch of data preparation under any feature-cache
//! policy (`policy`), with stage timers and counters (`ginex epoch`), and
//! the mmap baseline (`mmap`). The memory split between the feature and
//! neighbor caches is given explicitly (no planner yet).

pub mod epoch;
pub mod mmap;
pub mod policy;
